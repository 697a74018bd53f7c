// The cluster suite's setup: no jest-wide dev server (the suite runs its own Temporal server on
// Postgres), the workflow bundle its workers load, and a fresh ledger folder for the table.
require('../../scripts/register.js');
const { mkdtempSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { buildTestWorkflowBundle } = require('../support/temporalServer.ts');

module.exports = async function clusterGlobalSetup() {
  process.env.KEELSON_ENV_FILE = '';
  process.env.KEELSON_FAULTS_LEDGER = mkdtempSync(join(tmpdir(), 'keelson-cluster-ledger-'));
  await buildTestWorkflowBundle();
};
