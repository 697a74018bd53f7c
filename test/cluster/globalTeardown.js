// The cluster suite's teardown: the bundle removed, the reconciliation table of every scenario printed.
require('../../scripts/register.js');
const { removeTestWorkflowBundle } = require('../support/temporalServer.ts');
const { printReconciliation } = require('../faults/reconciliationTable.js');

module.exports = async function clusterGlobalTeardown() {
  await removeTestWorkflowBundle();
  const dir = process.env.KEELSON_FAULTS_LEDGER;
  if (dir) printReconciliation(dir, 'cluster suite reconciliation');
};
