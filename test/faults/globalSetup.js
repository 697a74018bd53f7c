// The fault suite's setup: the jest-wide Temporal dev server (as the other suites), and a fresh
// ledger folder each scenario writes its row to.
const { mkdtempSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const setup = require('../support/globalSetup.js');

module.exports = async function faultsGlobalSetup() {
  process.env.KEELSON_FAULTS_LEDGER = mkdtempSync(join(tmpdir(), 'keelson-faults-ledger-'));
  await setup();
};
