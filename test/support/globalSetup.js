// Once per Jest run, before any test file: one Temporal dev server shared by every worker, and one
// workflow bundle every test file's workers load.
require('../../scripts/register.js');
const { buildTestWorkflowBundle, startTestTemporal } = require('./temporalServer.ts');
const { declarePgvector } = require('./pgvector.ts');

/**
 * The projects named by `--selectProjects` (Jest does not pass them to global hooks), or undefined
 * when all run.
 */
function selectedProjects(argv) {
  const at = argv.findIndex((arg) => arg === '--selectProjects' || arg.startsWith('--selectProjects='));
  if (at === -1) return undefined;
  if (argv[at].includes('=')) return argv[at].split('=')[1].split(',');
  const names = [];
  for (const arg of argv.slice(at + 1)) {
    if (arg.startsWith('-')) break;
    names.push(arg);
  }
  return names;
}

module.exports = async function globalSetup() {
  // Every process a test starts inherits this: a developer's `.env` never reaches a test mesh (tests
  // set what they need; the .env tests name their own file).
  process.env.KEELSON_ENV_FILE = '';
  // Unit tests touch no server: `jest --selectProjects unit` starts none and needs no CLI.
  const selected = selectedProjects(process.argv);
  if (selected && selected.every((name) => name === 'unit')) return;
  await declarePgvector();
  // The server boots in a process of its own while this one bundles.
  await Promise.all([startTestTemporal(), buildTestWorkflowBundle()]);
};
