// The fault suite's teardown: the reconciliation table of every scenario's ledger row, printed to the
// log; a row that does not reconcile fails the run.
const teardown = require('../support/globalTeardown.js');
const { printReconciliation } = require('./reconciliationTable.js');

module.exports = async function faultsGlobalTeardown() {
  await teardown();
  const dir = process.env.KEELSON_FAULTS_LEDGER;
  if (!dir) return;
  printReconciliation(dir, 'fault suite reconciliation');
};
