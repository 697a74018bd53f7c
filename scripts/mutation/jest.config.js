// Jest as Stryker runs it for one module (KEELSON_MUTATION_MODULE, scripts/mutation/modules.js):
// one project of that module's tests, every @keelson/* import mapped into Stryker's sandbox, and the
// shared servers only where the module's tests need them.
const fs = require('node:fs');
const path = require('node:path');
const { modules } = require('./modules.js');
const jestConfig = require('../../jest.config.js');

const rootDir = path.resolve(__dirname, '../..');
const mod = modules[process.env.KEELSON_MUTATION_MODULE];
if (!mod) throw new Error(`KEELSON_MUTATION_MODULE must name one of ${Object.keys(modules).join(', ')}`);

// The workspaces' node_modules links point at the original tree; in the sandbox every @keelson/*
// import must load the sandbox's (mutated) copy instead.
function workspaceMapper() {
  const root = JSON.parse(fs.readFileSync(path.join(rootDir, 'package.json'), 'utf8'));
  const mapper = {};
  for (const dir of root.workspaces) {
    const file = path.join(rootDir, dir, 'package.json');
    if (!fs.existsSync(file)) continue;
    const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
    const escaped = pkg.name.replace(/[/.]/g, (c) => `\\${c}`);
    mapper[`^${escaped}$`] = `<rootDir>/${dir}/${pkg.main ?? 'src/index.ts'}`;
    mapper[`^${escaped}/(.*)$`] = `<rootDir>/${dir}/$1`;
  }
  return mapper;
}

const { displayName: _name, testMatch: _match, ...common } = jestConfig.projects[0];

module.exports = {
  ...common,
  rootDir,
  moduleNameMapper: workspaceMapper(),
  testMatch: mod.tests.map((glob) => `<rootDir>/${glob}`),
  testTimeout: jestConfig.testTimeout,
  ...(mod.needsServers ? { globalSetup: '<rootDir>/test/support/globalSetup.js', globalTeardown: '<rootDir>/test/support/globalTeardown.js' } : {}),
};
