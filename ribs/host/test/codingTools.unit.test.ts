import { existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MessageChunk, ToolContext } from '@keelson/ribs-contract';
import { BUILTIN_CODING_TOOLS } from '../src/builtins/codingTools';
import { writeTool } from '../src/builtins/writeTool';
import { globToRegExp } from '../src/builtins/globPattern';
import { READ_MAX_CHARS } from '../src/builtins/readTool';
import { startHost } from './support/quietHost';

// Read, Write, Edit and Glob against real files in a throwaway tree:
//   <root>/project    the turn's cwd and first root
//   <root>/artifacts  a second root
//   <root>/outside    never allowed; project/escape → outside, project/leak.txt → outside/secret.txt,
//                     project/dangling → outside/planted.txt (which does not exist)

const root = mkdtempSync(join(tmpdir(), 'keelson-coding-'));
const project = join(root, 'project');
const artifacts = join(root, 'artifacts');
const outside = join(root, 'outside');
for (const dir of [project, artifacts, outside]) mkdirSync(dir);
writeFileSync(join(outside, 'secret.txt'), 'the secret\n');
symlinkSync(outside, join(project, 'escape'));
symlinkSync(join(outside, 'secret.txt'), join(project, 'leak.txt'));
symlinkSync(join(outside, 'planted.txt'), join(project, 'dangling'));

async function tools() {
  const { host } = await startHost([]);
  return (name: string, input: unknown, allowedDirectories: string[] = [project, artifacts]) =>
    host.executeTool({ name, input, surface: 'workflow', cwd: project, allowedDirectories });
}

const DENIED = { status: 'policy-denied', isError: true, policyId: 'builtin:path_confinement' };

describe('the built-in coding tools', () => {
  it('are host tools, registered right after keelson_docs, with JSON-schema inputs', async () => {
    const { host } = await startHost([]);
    expect(host.tools().map((t) => t.name)).toEqual(['keelson_docs', ...BUILTIN_CODING_TOOLS]);
    expect(host.tools().find((t) => t.name === 'Write')).toMatchObject({ state_changing: true });
    expect(host.toolInputSchema('Edit')).toMatchObject({
      type: 'object',
      properties: { path: { type: 'string' }, old_string: { type: 'string' }, new_string: { type: 'string' }, replace_all: { type: 'boolean' } },
      required: ['path', 'old_string', 'new_string'],
    });
    expect(host.toolInputSchema('Bash')).toMatchObject({ properties: { command: { type: 'string' }, timeout: { type: 'integer' } }, required: ['command'] });
  });
});

describe('Read', () => {
  const file = join(project, 'lines.txt');
  writeFileSync(file, Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n'));

  it('returns numbered lines, paging with offset and limit', async () => {
    const call = await tools();
    const page = await call('Read', { path: 'lines.txt', offset: 3, limit: 2 });
    expect(page).toMatchObject({ status: 'ok', content: '     3\tline 3\n     4\tline 4\n[more lines follow; continue with offset=5]' });
    const tail = await call('Read', { path: file, offset: 29 });
    expect(tail.content).toBe('    29\tline 29\n    30\tline 30');
    await expect(call('Read', { path: 'lines.txt', offset: 31 })).resolves.toMatchObject({ isError: true, content: 'lines.txt has only 30 lines; offset 31 is past its end' });
  });

  it('caps long lines and large files, saying where to continue', async () => {
    const call = await tools();
    writeFileSync(join(project, 'wide.txt'), `${'x'.repeat(5000)}\nshort\n`);
    const wide = await call('Read', { path: 'wide.txt' });
    expect(wide.content).toBe(`     1\t${'x'.repeat(2000)} … [line cut]\n     2\tshort`);
    writeFileSync(join(project, 'big.txt'), Array.from({ length: 400 }, () => 'y'.repeat(1000)).join('\n'));
    const big = await call('Read', { path: 'big.txt' });
    const rows = big.content.split('\n');
    expect(big.content.length).toBeLessThanOrEqual(READ_MAX_CHARS + 100);
    expect(rows).toHaveLength(100);
    expect(rows.at(-1)).toBe('[output capped at 100000 characters; continue with offset=100]');
  });

  it('refuses a missing file, a directory and a binary file', async () => {
    const call = await tools();
    writeFileSync(join(project, 'blob.bin'), Buffer.from([1, 2, 0, 3]));
    await expect(call('Read', { path: 'nope.txt' })).resolves.toMatchObject({ status: 'tool-error', content: 'nope.txt: no such file or directory' });
    await expect(call('Read', { path: '.' })).resolves.toMatchObject({ status: 'tool-error', content: '. is a directory; list it with Glob' });
    await expect(call('Read', { path: 'blob.bin' })).resolves.toMatchObject({ status: 'tool-error', content: 'blob.bin is a binary file (4 bytes); not shown' });
  });

  it('reads from every root, and denies .., absolute paths and symlinks that lead outside', async () => {
    const call = await tools();
    writeFileSync(join(artifacts, 'plan.md'), 'the plan');
    await expect(call('Read', { path: join(artifacts, 'plan.md') })).resolves.toMatchObject({ status: 'ok', content: `     1\tthe plan` });
    for (const path of ['../outside/secret.txt', join(outside, 'secret.txt'), '/etc/passwd', 'leak.txt', 'escape/secret.txt', 'escape/../../outside/secret.txt']) {
      const denied = await call('Read', { path });
      expect(denied).toMatchObject(DENIED);
      expect(denied.content).toBe(`denied by builtin:path_confinement: path '${path}' resolves outside the turn's allowed directories`);
    }
  });
});

describe('Write', () => {
  it('creates a file with its parent directories, then overwrites it', async () => {
    const call = await tools();
    await expect(call('Write', { path: 'src/deep/new.ts', content: 'export {};\n' })).resolves.toMatchObject({ status: 'ok', content: 'Created src/deep/new.ts (11 bytes)' });
    await expect(call('Write', { path: join(project, 'src/deep/new.ts'), content: 'v2' })).resolves.toMatchObject({ content: 'Overwrote src/deep/new.ts (2 bytes)' });
    expect(readFileSync(join(project, 'src/deep/new.ts'), 'utf8')).toBe('v2');
  });

  it('denies writes that would land outside: .., absolute, a symlinked directory, a dangling symlink', async () => {
    const call = await tools();
    for (const path of ['../outside/a.txt', join(outside, 'b.txt'), 'escape/c.txt', 'dangling']) {
      await expect(call('Write', { path, content: 'pwned' })).resolves.toMatchObject(DENIED);
    }
    expect(existsSync(join(outside, 'a.txt')) || existsSync(join(outside, 'b.txt')) || existsSync(join(outside, 'c.txt')) || existsSync(join(outside, 'planted.txt'))).toBe(false);
  });

  it('refuses on its own, where no policy ran', async () => {
    const chunks: MessageChunk[] = [];
    const ctx: ToolContext = { cwd: project, allowedDirectories: [project], emit: (c) => chunks.push(c), abortSignal: new AbortController().signal };
    await writeTool().execute({ path: 'dangling', content: 'pwned' }, ctx);
    expect(chunks).toEqual([{ type: 'tool_result', toolUseId: '', isError: true, content: `path 'dangling' resolves outside the turn's allowed directories (${project})` }]);
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false);
  });

  it("refuses writes into .git and .keelson of any root (through a symlink too), and Read still reads them", async () => {
    mkdirSync(join(project, '.git', 'hooks'), { recursive: true });
    mkdirSync(join(project, '.keelson', 'workflows'), { recursive: true });
    writeFileSync(join(project, '.git', 'config'), '[core]\n');
    symlinkSync('.git', join(project, 'gitlink'));
    const call = await tools();
    for (const path of ['.git/hooks/pre-commit', '.git', 'gitlink/config', '.keelson/workflows/evil.yaml', join(artifacts, '.keelson', 'x.yaml'), 'sub/.git/config']) {
      const r = await call('Write', { path, content: '#!/bin/sh\necho pwned\n' });
      expect([path, r]).toEqual([path, expect.objectContaining({ status: 'tool-error', isError: true, content: expect.stringMatching(/is inside .*\/\.(git|keelson): agents may read \.git and \.keelson directories but not write them$/) })]);
    }
    expect(existsSync(join(project, '.git', 'hooks', 'pre-commit')) || existsSync(join(project, '.keelson', 'workflows', 'evil.yaml'))).toBe(false);
    await expect(call('Edit', { path: '.git/config', old_string: '[core]', new_string: '[core]\n\thooksPath = /tmp' })).resolves.toMatchObject({ status: 'tool-error', content: expect.stringContaining('agents may read') });
    expect(readFileSync(join(project, '.git', 'config'), 'utf8')).toBe('[core]\n');
    await expect(call('Read', { path: '.git/config' })).resolves.toMatchObject({ status: 'ok', content: '     1\t[core]' });
    await expect(call('Write', { path: '.gitignore', content: 'dist\n' })).resolves.toMatchObject({ status: 'ok' });
  });

  it('writes anywhere in an unconfined turn (no allowedDirectories)', async () => {
    const call = await tools();
    await expect(call('Write', { path: join(outside, 'free.txt'), content: 'ok' }, [])).resolves.toMatchObject({ status: 'ok' });
    expect(readFileSync(join(outside, 'free.txt'), 'utf8')).toBe('ok');
  });
});

describe('Edit', () => {
  const file = join(project, 'edit.ts');

  it('replaces a unique string, and every occurrence with replace_all', async () => {
    const call = await tools();
    writeFileSync(file, 'const a = 1;\nconst b = 2;\nconst c = a + b;\n');
    await expect(call('Edit', { path: 'edit.ts', old_string: 'const b = 2;', new_string: 'const b = 3;' })).resolves.toMatchObject({
      status: 'ok',
      content: 'Edited edit.ts: replaced 1 occurrence (first at line 2)',
    });
    await expect(call('Edit', { path: 'edit.ts', old_string: 'const', new_string: 'let', replace_all: true })).resolves.toMatchObject({
      content: 'Edited edit.ts: replaced 3 occurrences (first at line 1)',
    });
    expect(readFileSync(file, 'utf8')).toBe('let a = 1;\nlet b = 3;\nlet c = a + b;\n');
  });

  it('fails on a string not found, an ambiguous one and a no-op, leaving the file as it was', async () => {
    const call = await tools();
    writeFileSync(file, 'x = 1\nx = 1\n');
    await expect(call('Edit', { path: 'edit.ts', old_string: 'y = 1', new_string: 'y = 2' })).resolves.toMatchObject({
      status: 'tool-error',
      content: 'old_string was not found in edit.ts (the match is exact, whitespace and indentation included)',
    });
    await expect(call('Edit', { path: 'edit.ts', old_string: 'x = 1', new_string: 'x = 2' })).resolves.toMatchObject({
      status: 'tool-error',
      content: 'old_string occurs 2 times in edit.ts; include more surrounding context to make it unique, or set replace_all',
    });
    await expect(call('Edit', { path: 'edit.ts', old_string: 'x', new_string: 'x' })).resolves.toMatchObject({ status: 'tool-error' });
    await expect(call('Edit', { path: 'missing.ts', old_string: 'a', new_string: 'b' })).resolves.toMatchObject({ content: 'missing.ts: no such file or directory' });
    await expect(call('Edit', { path: 'edit.ts', old_string: '', new_string: 'b' })).resolves.toMatchObject({ status: 'invalid-input' });
    expect(readFileSync(file, 'utf8')).toBe('x = 1\nx = 1\n');
  });

  it('does not treat $ patterns in the replacement specially, and denies files outside', async () => {
    const call = await tools();
    writeFileSync(file, 'price\n');
    await call('Edit', { path: 'edit.ts', old_string: 'price', new_string: "$& $1 $$ $'" });
    expect(readFileSync(file, 'utf8')).toBe("$& $1 $$ $'\n");
    await expect(call('Edit', { path: 'leak.txt', old_string: 'the', new_string: 'a' })).resolves.toMatchObject(DENIED);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('the secret\n');
  });
});

describe('Glob', () => {
  const tree = join(project, 'tree');
  mkdirSync(join(tree, 'src/lib'), { recursive: true });
  mkdirSync(join(tree, 'node_modules/dep'), { recursive: true });
  for (const [f, age] of [['src/a.ts', 30], ['src/lib/b.ts', 10], ['src/lib/c.tsx', 20], ['src/d.js', 5], ['node_modules/dep/e.ts', 1], ['top.ts', 40]] as const) {
    writeFileSync(join(tree, f), f);
    const t = new Date(Date.now() - age * 60_000);
    utimesSync(join(tree, f), t, t);
  }

  it('lists matching files most recently modified first, skipping node_modules unless named', async () => {
    const call = await tools();
    await expect(call('Glob', { pattern: '**/*.ts', path: 'tree' })).resolves.toMatchObject({ status: 'ok', content: 'tree/src/lib/b.ts\ntree/src/a.ts\ntree/top.ts' });
    await expect(call('Glob', { pattern: 'tree/src/**/*.{ts,tsx}' })).resolves.toMatchObject({ content: 'tree/src/lib/b.ts\ntree/src/lib/c.tsx\ntree/src/a.ts' });
    await expect(call('Glob', { pattern: 'node_modules/**/*.ts', path: 'tree' })).resolves.toMatchObject({ content: 'tree/node_modules/dep/e.ts' });
    await expect(call('Glob', { pattern: '*.md', path: 'tree' })).resolves.toMatchObject({ status: 'ok', content: 'No files match *.md' });
  });

  it('never follows a symlinked directory, and refuses patterns and paths that lead outside', async () => {
    const call = await tools();
    expect((await call('Glob', { pattern: '**/secret.txt' })).content).toBe('No files match **/secret.txt');
    await expect(call('Glob', { pattern: `${outside}/*.txt` })).resolves.toMatchObject({
      status: 'tool-error',
      content: expect.stringMatching(/^path '.*outside' resolves outside the turn's allowed directories/),
    });
    await expect(call('Glob', { pattern: '../outside/*' })).resolves.toMatchObject({ status: 'tool-error', content: expect.stringMatching(/^path '\.\.\/outside' resolves outside/) });
    await expect(call('Glob', { pattern: '*', path: 'escape' })).resolves.toMatchObject(DENIED);
    await expect(call('Glob', { pattern: 'src/**/../../*' })).resolves.toMatchObject({ status: 'tool-error', content: expect.stringMatching(/'\.\.' may only lead the pattern/) });
  });

  it('caps the listing at 250 paths', async () => {
    const call = await tools();
    mkdirSync(join(project, 'many'));
    for (let i = 0; i < 260; i++) writeFileSync(join(project, 'many', `f${i}.txt`), '');
    const listed = (await call('Glob', { pattern: 'many/*.txt' })).content.split('\n');
    expect(listed).toHaveLength(251);
    expect(listed.at(-1)).toBe('[10 more not shown; narrow the pattern]');
  });

  it('compiles globs the way shells do', () => {
    const cases: [string, string, boolean][] = [
      ['**/*.ts', 'a.ts', true],
      ['**/*.ts', 'a/b/c.ts', true],
      ['*.ts', 'a/b.ts', false],
      ['src/?.ts', 'src/a.ts', true],
      ['src/[!a]*.ts', 'src/a.ts', false],
      ['src/[!a]*.ts', 'src/b.ts', true],
      ['{a,b/{c,d}}.md', 'b/d.md', true],
      ['a.(ts)', 'a.(ts)', true],
    ];
    for (const [glob, path, expected] of cases) expect([glob, path, globToRegExp(glob).test(path)]).toEqual([glob, path, expected]);
  });
});
