// Lint stays syntactic (no type information) so `npx eslint .` is fast; `tsc --noEmit` does the types.
// The workflows override is the determinism contract of CONTRIBUTING.md habit 6.
const { builtinModules } = require('node:module');
const { defineConfig } = require('eslint/config');
const tseslint = require('typescript-eslint');
const importX = require('eslint-plugin-import-x');
const jestPlugin = require('eslint-plugin-jest');
const { readFileSync } = require('node:fs');
const { dirname, join, relative, resolve } = require('node:path');
const { layers } = require('./scripts/layers');

const packageOf = (workspace) => JSON.parse(readFileSync(join(__dirname, workspace, 'package.json'), 'utf8')).name;

/** A workspace's tests and their support files: they may import the test doubles of the testing layer. */
const testGlobs = (workspace) => [`${workspace}/**/*.test.ts`, `${workspace}/test/**/*.ts`, `${workspace}/**/test/**/*.ts`];

/** Why `workspace` may not import `target` (a workspace above it, or a sibling subgraph). */
function refusal(workspace, layer, target) {
  if (target.sibling) return `A subgraph never imports another (${target.workspace}): share through a lower layer or call its GraphQL API.`;
  if (target.testOnly) return `${target.workspace} is a test double (layer "${target.layer}"): only tests import it, never shipped code (see ARCHITECTURE.md).`;
  return `${workspace} (layer "${layer.name}") may not import ${target.workspace} (layer "${target.layer}", above it): see ARCHITECTURE.md.`;
}

/** The layer rule's options for `workspace` refusing `targets` — by name, and any file deep inside one (`@keelson/stack/src/compose`). */
const restrictedImports = (workspace, layer, targets) => ({
  '@typescript-eslint/no-restricted-imports': [
    'error',
    {
      paths: targets.map((t) => ({ name: packageOf(t.workspace), message: refusal(workspace, layer, t) })),
      patterns: targets.map((t) => ({ group: [`${packageOf(t.workspace)}/*`], message: refusal(workspace, layer, t) })),
    },
  ],
});

/**
 * The layer rule (scripts/layers.js, drawn in ARCHITECTURE.md): a workspace imports its own layer or
 * below, and a subgraph never imports another subgraph. The testing layer (test doubles) sits on top:
 * a workspace's tests may import it, its shipped code never.
 */
const layerRules = layers.flatMap((layer, index) =>
  layer.workspaces.flatMap((workspace) => {
    const above = layers.slice(index + 1).flatMap((l) => l.workspaces.map((w) => ({ workspace: w, layer: l.name, testOnly: l.testOnly === true })));
    const siblings = layer.isolated ? layer.workspaces.filter((w) => w !== workspace).map((w) => ({ workspace: w, layer: layer.name, sibling: true })) : [];
    if (layer.testOnly) return [{ files: [`${workspace}/**/*.ts`], rules: restrictedImports(workspace, layer, [...above, ...siblings]) }];
    return [
      { files: [`${workspace}/**/*.ts`], ignores: testGlobs(workspace), rules: restrictedImports(workspace, layer, [...above, ...siblings]) },
      { files: testGlobs(workspace), rules: restrictedImports(workspace, layer, [...above.filter((t) => !t.testOnly), ...siblings]) },
    ];
  }),
);

const workspaceDirs = JSON.parse(readFileSync(join(__dirname, 'package.json'), 'utf8'))
  .workspaces.map((w) => join(__dirname, w))
  .sort((a, b) => b.length - a.length);
/** The workspace folder holding an absolute path, or null (the root package: test/, bench/, scripts/). */
const workspaceOf = (file) => workspaceDirs.find((w) => file === w || file.startsWith(`${w}/`)) ?? null;

/**
 * `keelson/no-relative-cross-workspace`: a relative import (with or without an extension, `import`,
 * `export … from`, `import()` or `require`) that lands in another workspace than the importing file's.
 * import-x's no-relative-packages misses the extensionless ones (it resolves to nothing), which is
 * how this codebase writes imports; this rule resolves the path itself. Reach another workspace by
 * its package name, where the layer rules see it.
 */
const noRelativeCrossWorkspace = {
  meta: { type: 'problem', schema: [], messages: { cross: '{{spec}} reaches into {{target}} by a relative path: import it as {{name}} (where the layer rules apply).' } },
  create(context) {
    const from = workspaceOf(context.filename);
    const check = (node, spec) => {
      if (typeof spec !== 'string' || !spec.startsWith('.')) return;
      const target = workspaceOf(resolve(dirname(context.filename), spec));
      if (!target || target === from) return;
      const rel = relative(__dirname, target);
      context.report({ node, messageId: 'cross', data: { spec, target: rel, name: packageOf(rel) } });
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value),
      CallExpression: (node) =>
        node.callee.type === 'Identifier' && node.callee.name === 'require' && node.arguments[0]?.type === 'Literal' && check(node.arguments[0], node.arguments[0].value),
    };
  },
};

const nodeBuiltins = [...new Set(builtinModules.filter((name) => !name.startsWith('_')).map((name) => name.replace(/^node:/, '')))];

const sandboxMessage =
  'Workflow code runs in the deterministic sandbox and is replayed from history: do I/O in an activity and reach it through proxyActivities.';

module.exports = defineConfig(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/coverage/**', 'client/src/gql/**', 'test/fixtures/seed000/**', 'reports/**', '.stryker-tmp/**'] },
  tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Undeclared dependencies and reaching into another package by a relative path fail lint.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX, keelson: { rules: { 'no-relative-cross-workspace': noRelativeCrossWorkspace } } },
    rules: {
      'import-x/no-extraneous-dependencies': ['error', { includeTypes: true }],
      'import-x/no-relative-packages': 'error',
      'keelson/no-relative-cross-workspace': 'error',
    },
  },
  {
    // The monorepo's own suites, benchmarks and tools (root test/, bench/, scripts/) compose every package.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'import-x/no-extraneous-dependencies': 'off' },
  },
  {
    // Tests that can fail: none focused or skipped, each asserting (directly or through the suite's
    // assertion helpers), and no module doubles of the real parts (Postgres, TypeORM, Temporal,
    // processes, the filesystem) — the standards' "real parts".
    files: ['**/*.test.ts'],
    plugins: { jest: jestPlugin },
    rules: {
      'jest/no-focused-tests': 'error',
      'jest/no-disabled-tests': 'error',
      'jest/no-identical-title': 'error',
      'jest/valid-expect': 'error',
      'jest/expect-expect': [
        'error',
        {
          // The suites' own assertion helpers: each throws (or fails an expect) when what it waits for does not come.
          assertFunctionNames: ['expect', 'expect*', '*.expect*', 'assert*', 'until', 'waitFor*', '*.until', '**.waitFor', 'eventually', 'responseShows', 'runAcceptanceScenario', 'Worker.runReplayHistory'],
          // The cluster suite's `it` that notes unfinished scenarios: each body is checked where it is written.
          additionalTestBlockFunctions: ['scenario'],
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector:
            "CallExpression[callee.object.name='jest'][callee.property.name=/^(mock|doMock|unstable_mockModule)$/][arguments.0.value=/^(pg|typeorm|@temporalio\\/.*|child_process|node:child_process|fs|node:fs|fs\\/promises|node:fs\\/promises)$/]",
          message: 'Tests use the real one (README "Two commands"): no jest.mock of pg, TypeORM, @temporalio/*, child_process or fs.',
        },
      ],
    },
  },
  {
    // Unit tests do no process or socket I/O (jest.config.js: "no I/O beyond the filesystem"): one that
    // must spawn or listen is an integration test (`*.int.test.ts`).
    files: ['**/*.unit.test.ts'],
    rules: {
      // The core rule (the layer rules use typescript-eslint's, which a later block would override).
      'no-restricted-imports': [
        'error',
        {
          paths: ['child_process', 'node:child_process', 'net', 'node:net', 'http', 'node:http', 'https', 'node:https', 'ws', 'pg'].map((name) => ({
            name,
            message: 'A unit test does no process or socket I/O: make it an integration test (*.int.test.ts).',
          })),
        },
      ],
    },
  },
  {
    // A function reads as one step of its caller: past 80 lines it hides its own steps, so split it by
    // meaning (named helpers, one factory per family). Tests, benchmarks and scripts may read longer.
    files: ['**/*.ts'],
    ignores: ['**/*.test.ts', 'test/**', '**/test/**', 'bench/**', 'scripts/**', '**/scripts/**'],
    rules: { 'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }] },
  },
  ...layerRules,
  {
    // CommonJS entry points and config files.
    files: ['**/*.js', '**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: ['temporal/src/workflows/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({ name, message: sandboxMessage })),
            ...['pg', 'typeorm', '@temporalio/client', '@temporalio/worker', '@temporalio/activity', '@temporalio/testing'].map((name) => ({
              name,
              message: sandboxMessage,
            })),
          ],
          patterns: [
            { group: ['node:*'], message: sandboxMessage },
            { group: ['@keelson/*', '!@keelson/schema'], message: 'Workflows import only @keelson/schema (pure names and types).' },
            {
              group: ['../*', '!../searchAttributeKeys'],
              allowTypeImports: true,
              message: 'From outside workflows/ import types only (`import type` of activities); their code would enter the sandbox.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        ...['setTimeout', 'setInterval', 'setImmediate'].map((name) => ({
          name,
          message: 'Wait with sleep() or condition() from @temporalio/workflow: a workflow timer is recorded and replayed.',
        })),
        { name: 'process', message: 'A workflow cannot read the process (env, argv, time): pass values in as input or read them in an activity.' },
      ],
      'no-restricted-properties': [
        'error',
        {
          object: 'Date',
          property: 'now',
          message: 'Take time from workflowInfo() (or an activity) and wait with sleep(): workflow time is replayed, not read.',
        },
        {
          object: 'Math',
          property: 'random',
          message: 'Use uuid4() from @temporalio/workflow, or take randomness from an activity: it must replay identically.',
        },
      ],
    },
  },
);
