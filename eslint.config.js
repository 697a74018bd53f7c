// Lint stays syntactic (no type information) so `npx eslint .` is fast; `tsc --noEmit` does the types.
// The workflows override is the determinism contract of STYLE.md habit 6.
const { builtinModules } = require('node:module');
const { defineConfig } = require('eslint/config');
const tseslint = require('typescript-eslint');
const importX = require('eslint-plugin-import-x');
const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { layers } = require('./scripts/layers');

const packageOf = (workspace) => JSON.parse(readFileSync(join(__dirname, workspace, 'package.json'), 'utf8')).name;

/**
 * The layer rule (scripts/layers.js, drawn in ARCHITECTURE.md): a workspace imports its own layer or
 * below, and a subgraph never imports another subgraph.
 */
const layerRules = layers.flatMap((layer, index) =>
  layer.workspaces.map((workspace) => {
    const above = layers.slice(index + 1).flatMap((l) => l.workspaces.map((w) => ({ workspace: w, layer: l.name })));
    const siblings = layer.isolated ? layer.workspaces.filter((w) => w !== workspace).map((w) => ({ workspace: w, layer: layer.name })) : [];
    return {
      files: [`${workspace}/**/*.ts`],
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          {
            paths: [
              ...above.map(({ workspace: w, layer: l }) => ({
                name: packageOf(w),
                message: `${workspace} (layer "${layer.name}") may not import ${w} (layer "${l}", above it): see ARCHITECTURE.md.`,
              })),
              ...siblings.map(({ workspace: w }) => ({
                name: packageOf(w),
                message: `A subgraph never imports another (${w}): share through a lower layer or call its GraphQL API.`,
              })),
            ],
          },
        ],
      },
    };
  }),
);

const nodeBuiltins = [...new Set(builtinModules.filter((name) => !name.startsWith('_')).map((name) => name.replace(/^node:/, '')))];

const sandboxMessage =
  'Workflow code runs in the deterministic sandbox and is replayed from history: do I/O in an activity and reach it through proxyActivities.';

module.exports = defineConfig(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/coverage/**', 'client/src/gql/**', 'test/fixtures/seed000/**'] },
  tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
  {
    // Undeclared dependencies and reaching into another package by a relative path fail lint.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    rules: {
      'import-x/no-extraneous-dependencies': ['error', { includeTypes: true }],
      'import-x/no-relative-packages': 'error',
    },
  },
  {
    // The monorepo's own suites, benchmarks and tools (root test/, bench/, scripts/) compose every package.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    rules: { 'import-x/no-extraneous-dependencies': 'off' },
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
