// StrykerJS over one core module at a time (scripts/mutation/modules.js), chosen by
// KEELSON_MUTATION_MODULE; `npm run test:mutation` runs them in turn (scripts/mutation/run.js).
const { modules } = require('./scripts/mutation/modules.js');

const name = process.env.KEELSON_MUTATION_MODULE;
const mod = modules[name];
if (!mod) throw new Error(`KEELSON_MUTATION_MODULE must name one of ${Object.keys(modules).join(', ')} (got ${name ?? 'nothing'})`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
module.exports = {
  packageManager: 'npm',
  testRunner: 'jest',
  checkers: ['typescript'],
  // run.js writes a tsconfig holding only this module's files (and, through them, what they import):
  // the checker then type-checks that, not the whole monorepo, for every mutant.
  tsconfigFile: process.env.KEELSON_MUTATION_TSCONFIG ?? 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  // Tests are never mutated, whatever a module's globs sweep in: a mutant in a test proves nothing.
  mutate: [...mod.mutate, '!**/*.test.ts'],
  jest: { projectType: 'custom', configFile: 'scripts/mutation/jest.config.js', enableFindRelatedTests: false },
  concurrency: Number(process.env.KEELSON_MUTATION_CONCURRENCY ?? (mod.needsServers ? 1 : 2)),
  timeoutMS: 20_000,
  incremental: true,
  incrementalFile: `reports/mutation/${name}.incremental.json`,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${name}.html` },
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  thresholds: { high: 90, low: 80, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  // Anchored: an unanchored 'docs' also dropped ribs/host/src/docs (the rib host's catalog) from the sandbox.
  ignorePatterns: ['/reports', '/.keelson', '/docs', '/gateway/graphiql/dist'],
};
