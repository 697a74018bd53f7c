#!/usr/bin/env node
// npm run test:mutation [-- [--force] <module> …]: StrykerJS over each core module in turn (all by
// default), resumable (Stryker's --incremental file per module), then a table of mutation scores.
// --force re-tests every mutant (the incremental file otherwise keeps results, "Survived" included,
// for mutants whose code and tests look unchanged). Exits 1 when a module scores under the target.
// Slow: hours on two cores for all of them; outside .ci/run.
require('../register.js');
const { spawnSync } = require('node:child_process');
const { readFileSync, writeFileSync, existsSync } = require('node:fs');
const path = require('node:path');
const { modules } = require('./modules.js');
const { startTestTemporal, stopTestTemporal, buildTestWorkflowBundle, removeTestWorkflowBundle } = require('../../test/support/temporalServer.ts');

const TARGET = 80;
const root = path.resolve(__dirname, '../..');

/** Mutation score (killed + timeout over all valid mutants) and counts from a Stryker JSON report. */
function score(reportFile) {
  const report = JSON.parse(readFileSync(reportFile, 'utf8'));
  const counts = {};
  for (const file of Object.values(report.files)) for (const m of file.mutants) counts[m.status] = (counts[m.status] ?? 0) + 1;
  const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
  const undetected = (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
  const valid = detected + undetected;
  return { counts, detected, undetected, score: valid ? (100 * detected) / valid : 100 };
}

/**
 * Writes scripts/mutation/tsconfig.<module>.json (gitignored): the root tsconfig narrowed to the
 * module's mutated files, so Stryker's TypeScript checker compiles those and what they import rather
 * than the whole monorepo (platform-sandbox's checker start: 73 s → 16 s). Returns its path from root.
 */
function writeModuleTsconfig(name) {
  const globs = modules[name].mutate;
  const up = (glob) => `../../${glob}`;
  const tsconfig = {
    extends: '../../tsconfig.json',
    include: globs.filter((g) => !g.startsWith('!')).map(up),
    exclude: [...globs.filter((g) => g.startsWith('!')).map((g) => up(g.slice(1))), '../../**/*.test.ts', '../../**/node_modules', '../../**/dist'],
  };
  const file = `scripts/mutation/tsconfig.${name}.json`;
  writeFileSync(path.join(root, file), `${JSON.stringify(tsconfig, null, 2)}\n`);
  return file;
}

async function main() {
  const args = process.argv.slice(2);
  const force = args.includes('--force');
  const asked = args.filter((a) => a !== '--force');
  const unknown = asked.filter((m) => !modules[m]);
  if (unknown.length) {
    console.error(`unknown module(s): ${unknown.join(', ')}; known: ${Object.keys(modules).join(', ')}`);
    process.exit(2);
  }
  const names = asked.length ? asked : Object.keys(modules);
  if (names.some((n) => modules[n].needsServers)) {
    console.log('[mutation] starting one Temporal dev server and the workflow bundle for the integration tests');
    await Promise.all([startTestTemporal(), buildTestWorkflowBundle()]);
  }
  const results = [];
  try {
    for (const [i, name] of names.entries()) {
      console.log(`\n[mutation] ${i + 1}/${names.length} ${name}: ${modules[name].mutate.join(' ')}`);
      const started = Date.now();
      const tsconfig = writeModuleTsconfig(name);
      const run = spawnSync('npx', ['stryker', 'run', 'stryker.config.js', ...(force ? ['--force'] : [])], {
        cwd: root,
        stdio: 'inherit',
        env: { ...process.env, KEELSON_MUTATION_MODULE: name, KEELSON_MUTATION_TSCONFIG: tsconfig },
      });
      const report = path.join(root, 'reports/mutation', `${name}.json`);
      if (run.status !== 0 || !existsSync(report)) {
        results.push({ name, error: `stryker exited ${run.status ?? run.signal}` });
        continue;
      }
      results.push({ name, seconds: Math.round((Date.now() - started) / 1000), ...score(report) });
    }
  } finally {
    await stopTestTemporal();
    await removeTestWorkflowBundle();
  }
  console.log('\n[mutation] module                 score   killed  survived  no-cov  timeout  seconds');
  for (const r of results) {
    if (r.error) {
      console.log(`[mutation] ${r.name.padEnd(22)} ${r.error}`);
      continue;
    }
    const c = r.counts;
    console.log(
      `[mutation] ${r.name.padEnd(22)} ${r.score.toFixed(1).padStart(5)}%  ${String(c.Killed ?? 0).padStart(6)}  ${String(c.Survived ?? 0).padStart(8)}  ${String(c.NoCoverage ?? 0).padStart(6)}  ${String(c.Timeout ?? 0).padStart(7)}  ${String(r.seconds).padStart(7)}`,
    );
  }
  const failing = results.filter((r) => r.error || r.score < TARGET);
  if (failing.length) {
    console.log(`[mutation] under ${TARGET}%: ${failing.map((r) => r.name).join(', ')} (reports/mutation/<module>.html lists the survivors)`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
