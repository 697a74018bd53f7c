// Updates test/support/durations.json (the start order of test files, see test/support/sequencer.js)
// from the JSON report of a Jest run: `npx jest --json --outputFile=/tmp/jest.json`, then
// `node scripts/testDurations.js /tmp/jest.json`. Files the report holds get its seconds; files it
// lacks keep theirs while they exist; deleted files are dropped.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const tablePath = path.join(root, 'test', 'support', 'durations.json');

const reportPath = process.argv[2];
if (!reportPath) {
  console.error('usage: node scripts/testDurations.js <jest --json report>');
  process.exit(2);
}
const report = JSON.parse(fs.readFileSync(reportPath, 'utf8'));
const table = JSON.parse(fs.readFileSync(tablePath, 'utf8'));
for (const result of report.testResults) {
  const file = path.relative(root, result.name).split(path.sep).join('/');
  table[file] = Math.round((result.endTime - result.startTime) / 100) / 10;
}
const kept = Object.entries(table)
  .filter(([file]) => fs.existsSync(path.join(root, file)))
  .sort(([a, x], [b, y]) => y - x || a.localeCompare(b));
fs.writeFileSync(tablePath, `${JSON.stringify(Object.fromEntries(kept), null, 2)}\n`);
console.log(`${tablePath}: ${kept.length} files`);
