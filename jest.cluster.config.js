// `npm run test:cluster`: the production shape (issue 30) — a Temporal server on Postgres, HAProxy,
// every service its own process with replicas — booted once, then under faults. Its global teardown
// prints the reconciliation table like the fault suite's and fails when a row does not reconcile.
const faults = require('./jest.faults.config.js');

module.exports = {
  ...faults,
  displayName: 'cluster',
  testMatch: ['<rootDir>/test/cluster/**/*.cluster.test.ts'],
  globalSetup: '<rootDir>/test/cluster/globalSetup.js',
  globalTeardown: '<rootDir>/test/cluster/globalTeardown.js',
  testTimeout: 300_000,
};
