// Three projects: unit (no I/O beyond the filesystem), integration (real Postgres and a real
// Temporal dev server), e2e (the whole stack booted in-process, spoken to only as a client).
const fs = require('node:fs');
const path = require('node:path');

const swc = JSON.parse(fs.readFileSync(path.join(__dirname, '.swcrc'), 'utf8'));
delete swc.$schema;
const transform = { '^.+\\.ts$': ['@swc/jest', { ...swc, swcrc: false }] };
const common = {
  transform,
  testEnvironment: 'node',
  setupFiles: ['reflect-metadata'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  // @keelson/client from its source (its `@keelson/source` export condition; the published exports name dist/).
  testEnvironmentOptions: { customExportConditions: ['node', 'node-addons', '@keelson/source'] },
  // Stryker's sandboxes (npm run test:mutation) are copies of the tree: not tests of this one.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/.stryker-tmp/'],
  modulePathIgnorePatterns: ['<rootDir>/.stryker-tmp/'],
};

module.exports = {
  globalSetup: '<rootDir>/test/support/globalSetup.js',
  globalTeardown: '<rootDir>/test/support/globalTeardown.js',
  maxWorkers: 2,
  // Longest files first (from a checked-in table of durations; a fresh clone has no Jest cache).
  testSequencer: '<rootDir>/test/support/sequencer.js',
  // Read at the top level only (jest-circus ignores it per project): the real stack boots in tests.
  testTimeout: 60_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/**/*.unit.test.ts'] },
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/**/*.int.test.ts'] },
    { ...common, displayName: 'e2e', testMatch: ['<rootDir>/test/**/*.e2e.test.ts'] },
  ],
};
