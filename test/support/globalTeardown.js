// Once per Jest run, after every test file: stops what globalSetup started.
require('../../scripts/register.js');
const { removeTestWorkflowBundle, stopTestTemporal } = require('./temporalServer.ts');

module.exports = async function globalTeardown() {
  await stopTestTemporal();
  await removeTestWorkflowBundle();
};
