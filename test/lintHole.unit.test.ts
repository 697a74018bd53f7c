import { join } from 'node:path';
import { ESLint } from 'eslint';

// The layer rules' hole, planted: a file of one workspace reaching into another by a relative path
// (with or without an extension, import/export/require) or a deep import of a higher layer's file.
// The repository's own lint config must refuse each, and keep allowing what is legal.

const root = join(__dirname, '..');
// The repository's config, handed over as is (ESLint's own loader imports it dynamically, which Jest's VM refuses).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const config = require(join(root, 'eslint.config.js')) as ESLint.Options['overrideConfig'];
const eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: config });

async function problems(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return result!.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe('lint keeps workspaces apart', () => {
  it.each([
    ["import { composeSupergraph } from '../../stack/src/compose';\nexport const x = composeSupergraph;\n"],
    ["import { composeSupergraph } from '../../stack/src/compose.ts';\nexport const x = composeSupergraph;\n"],
    ["export { composeSupergraph } from '../../stack/src/compose';\n"],
    ["export * from '../../stack/src/compose';\n"],
    ["// eslint-disable-next-line @typescript-eslint/no-require-imports\nexport const x = require('../../stack/src/compose');\n"],
  ])('refuses a relative import into another workspace: %s', async (code) => {
    expect(await problems('schema/src/planted.ts', code)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^keelson\/no-relative-cross-workspace: \.\.\/\.\.\/stack\/src\/compose(\.ts)? reaches into stack by a relative path: import it as @keelson\/stack/)]),
    );
  });

  it('refuses a deep import of a higher layer, as it refuses the package itself', async () => {
    expect(await problems('schema/src/planted.ts', "import { composeSupergraph } from '@keelson/stack/src/compose';\nexport const x = composeSupergraph;\n")).toEqual(
      expect.arrayContaining([expect.stringMatching(/^@typescript-eslint\/no-restricted-imports: '@keelson\/stack\/src\/compose' import is restricted .*may not import stack/)]),
    );
  });

  it('allows a relative import inside the workspace, and root suites reaching a workspace by name', async () => {
    expect(await problems('schema/src/planted.ts', "import { parseEnv } from './config';\nexport const x = parseEnv;\n")).toEqual([]);
    expect(await problems('test/planted.unit.test.ts', "import { composeSupergraph } from '@keelson/stack/src/compose';\nexport const x = composeSupergraph;\n")).toEqual([]);
  });

  it("keeps the testing layer's doubles out of shipped code, and lets the workspace's tests use them", async () => {
    const code = "import { staticConfigPort } from '@keelson/host-doubles';\nexport const x = staticConfigPort;\n";
    expect(await problems('ribs/host/src/planted.ts', code)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^@typescript-eslint\/no-restricted-imports: '@keelson\/host-doubles' import is restricted .*is a test double \(layer "testing"\)/)]),
    );
    expect(await problems('ribs/host/test/support/planted.ts', code)).toEqual([]);
    expect(await problems('ribs/host/src/planted.unit.test.ts', `${code}it('x', () => { expect(x).toBeDefined(); });\n`)).toEqual([]);
    // A double may not reach above its own layer's rules either: nothing sits above the testing layer.
    expect(await problems('testing/host-doubles/src/planted.ts', "import { startMesh } from '@keelson/stack';\nexport const x = startMesh;\n")).toEqual(
      expect.arrayContaining([expect.stringMatching(/no-extraneous-dependencies/)]),
    );
  });

  it('refuses tests that cannot fail: focused, skipped, asserting nothing, or doubling a real part', async () => {
    const found = await problems(
      'platform/src/planted.unit.test.ts',
      [
        "jest.mock('pg');",
        "jest.mock('@temporalio/client');",
        "it.only('focused', () => { expect(1).toBe(1); });",
        "it.skip('skipped', () => { expect(1).toBe(1); });",
        "it('asserts nothing', () => { const a = 1; void a; });",
        "it('asserts through a helper', async () => { await until('x', async () => 1, (v) => v === 1); });",
        'declare function until(what: string, f: () => Promise<number>, ok: (v: number) => boolean): Promise<void>;',
        '',
      ].join('\n'),
    );
    const rules = found.map((f) => f.split(':')[0]);
    expect(rules.sort()).toEqual(['jest/expect-expect', 'jest/no-disabled-tests', 'jest/no-focused-tests', 'no-restricted-syntax', 'no-restricted-syntax'].sort());
  });

  it('refuses a function over 80 lines in shipped code (blank lines and comments not counted); tests and scripts may run longer', async () => {
    // A function of `body` statements spans body + 4 lines.
    const fn = (body: number, padding = '') => `export function planted(): number {\n  let x = 0;\n${`  x += 1;\n${padding}`.repeat(body)}  return x;\n}\n`;
    const long = (file: string, code: string) => problems(file, code).then((found) => found.filter((f) => f.startsWith('max-lines-per-function')));
    expect(await long('runs/src/planted.ts', fn(76))).toEqual([]);
    expect(await long('runs/src/planted.ts', fn(76, '\n  // why\n'))).toEqual([]);
    expect(await long('runs/src/planted.ts', fn(77))).toEqual([expect.stringMatching(/has too many lines \(81\)\. Maximum allowed is 80/)]);
    expect(await long('temporal/src/workflows/planted.ts', fn(77))).toHaveLength(1);
    for (const file of ['runs/src/planted.int.test.ts', 'test/planted.e2e.test.ts', 'scripts/planted.ts', 'bench/planted.ts', 'temporal/scripts/planted.ts', 'temporal/test/planted.ts']) {
      expect({ file, found: await long(file, fn(120)) }).toEqual({ file, found: [] });
    }
  });

  it('keeps unit tests off processes and sockets, in a workspace as at the root', async () => {
    for (const file of ['platform/src/planted.unit.test.ts', 'test/planted.unit.test.ts']) {
      const found = await problems(file, "import { execFile } from 'node:child_process';\nimport { createServer } from 'node:net';\nit('x', () => { expect([execFile, createServer]).toHaveLength(2); });\n");
      expect({ file, rules: found.map((f) => f.split(':')[0]) }).toEqual({ file, rules: ['no-restricted-imports', 'no-restricted-imports'] });
    }
    // …and an integration test may.
    expect(await problems('platform/src/planted.int.test.ts', "import { execFile } from 'node:child_process';\nit('x', () => { expect(execFile).toBeDefined(); });\n")).toEqual([]);
  });
});
