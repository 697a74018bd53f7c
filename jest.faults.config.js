// `npm run test:faults`: the fault-injection suite (issue 15). Each scenario boots real parts, injects
// its faults, and writes a ledger row; the global teardown prints the reconciliation table and fails
// the run when a row does not reconcile. Files run one at a time: they kill processes and
// backends and time recoveries, which parallel files would disturb.
const fs = require('node:fs');
const path = require('node:path');

const swc = JSON.parse(fs.readFileSync(path.join(__dirname, '.swcrc'), 'utf8'));
delete swc.$schema;

module.exports = {
  displayName: 'faults',
  transform: { '^.+\\.ts$': ['@swc/jest', { ...swc, swcrc: false }] },
  testEnvironment: 'node',
  // @keelson/client from its source, as in jest.config.js (without it the suite needs a built dist/).
  testEnvironmentOptions: { customExportConditions: ['node', 'node-addons', '@keelson/source'] },
  setupFiles: ['reflect-metadata'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testMatch: ['<rootDir>/test/faults/**/*.faults.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  globalSetup: '<rootDir>/test/faults/globalSetup.js',
  globalTeardown: '<rootDir>/test/faults/globalTeardown.js',
  maxWorkers: 1,
  testTimeout: 240_000,
};
