import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { canonicalPath, checkPath, confinePath, ConfinementError, isInside, protectedDirOf, SymlinkLoopError, type PathAccess } from './index';

// One throwaway tree: a root (the run's cwd), a second root (its artifacts), a sibling whose name
// extends the root's (prefix confusion) and a directory outside everything.
const base = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-confine-')));
const root = join(base, 'root');
const artifacts = join(base, 'artifacts');
const sibling = join(base, 'rootx');
const outside = join(base, 'outside');
for (const dir of [join(root, 'sub'), join(root, '.git', 'hooks'), join(root, 'nested', '.git'), join(root, '.keelson', 'workflows'), artifacts, sibling, join(outside, 'deeper')]) {
  mkdirSync(dir, { recursive: true });
}
writeFileSync(join(root, 'sub', 'ok.txt'), 'ok');
writeFileSync(join(root, '.git', 'config'), '[core]\n');
writeFileSync(join(outside, 'secret.txt'), 'secret');
writeFileSync(join(sibling, 'file.txt'), 'not ours');
symlinkSync(join(outside, 'secret.txt'), join(root, 'leak.txt'));
symlinkSync(outside, join(root, 'up'));
symlinkSync(join(outside, 'deeper'), join(root, 'down'));
symlinkSync(join(root, 'sub'), join(root, 'inside'));
symlinkSync(join(outside, 'planted.txt'), join(root, 'dangling'));
symlinkSync('.git', join(root, 'g'));
symlinkSync('loop-b', join(root, 'loop-a'));
symlinkSync('loop-a', join(root, 'loop-b'));

afterAll(() => rmSync(base, { recursive: true, force: true }));

type Row = [name: string, path: string, access: PathAccess, expected: string | 'outside' | 'protected' | 'unresolvable'];

const roots = [root, artifacts];
const rows: Row[] = [
  ['a relative path inside', 'sub/ok.txt', 'read', join(root, 'sub', 'ok.txt')],
  ['the root itself', '.', 'read', root],
  ['an absolute path inside', join(root, 'sub', 'ok.txt'), 'read', join(root, 'sub', 'ok.txt')],
  ['a path in the second root', join(artifacts, 'plan.md'), 'write', join(artifacts, 'plan.md')],
  ['.. out of the root', '../outside/secret.txt', 'read', 'outside'],
  ['.. after a real directory', 'sub/../../outside/secret.txt', 'read', 'outside'],
  ['.. that stays inside', 'sub/../sub/ok.txt', 'read', join(root, 'sub', 'ok.txt')],
  ['an absolute path outside', join(outside, 'secret.txt'), 'read', 'outside'],
  ['/etc/passwd', '/etc/passwd', 'read', 'outside'],
  ['~ (the home directory)', '~/.ssh/id_rsa', 'read', 'outside'],
  ['a symlink to a file outside', 'leak.txt', 'read', 'outside'],
  ['a symlinked directory leading outside', 'up/secret.txt', 'read', 'outside'],
  ['a symlink that stays inside, resolved to its target', 'inside/ok.txt', 'read', join(root, 'sub', 'ok.txt')],
  ['link/.. is the parent of the target (physical), not the root', 'down/../secret.txt', 'read', 'outside'],
  ['a dangling symlink to a file a write would create outside', 'dangling', 'write', 'outside'],
  ['a missing file: the nearest existing parent, then the rest', 'sub/new/deeper/file.txt', 'write', join(root, 'sub', 'new', 'deeper', 'file.txt')],
  ['a missing file below a symlink leading outside', 'up/new/file.txt', 'write', 'outside'],
  ['prefix confusion: a sibling named root + "x"', join(sibling, 'file.txt'), 'read', 'outside'],
  ['prefix confusion through ..', '../rootx/file.txt', 'read', 'outside'],
  ['a symlink loop', 'loop-a/x', 'read', 'unresolvable'],
  // A `..` after a missing component lands back in a real directory: what follows is resolved again.
  ['missing/.. then a symlinked directory leading outside', 'nope/../up/secret.txt', 'read', 'outside'],
  ['missing/.. then a symlink to a file outside', 'nope/../leak.txt', 'read', 'outside'],
  ['missing/missing/../.. then a symlink outside', 'nope/deeper/../../up/new.txt', 'write', 'outside'],
  ['missing/.. then a symlink to .git, writing a hook', 'nope/../g/hooks/post-checkout', 'write', 'protected'],
  ['missing/.. that stays inside', 'nope/../sub/ok.txt', 'read', join(root, 'sub', 'ok.txt')],
  ['a missing top-level directory/.. then a symlink outside', `/keelson-no-such-dir/..${root}/leak.txt`, 'read', 'outside'],
  ['missing/.. then a missing file', 'nope/../sub/new.txt', 'write', join(root, 'sub', 'new.txt')],
  ['reading .git is allowed', '.git/config', 'read', join(root, '.git', 'config')],
  ['writing a .git hook is refused', '.git/hooks/pre-commit', 'write', 'protected'],
  ['writing .git itself (a worktree gitfile) is refused', '.git', 'write', 'protected'],
  ['writing through a symlink to .git is refused', 'g/config', 'write', 'protected'],
  ['writing a nested repository’s .git is refused', 'nested/.git/config', 'write', 'protected'],
  ['writing .keelson/workflows is refused', '.keelson/workflows/evil.yaml', 'write', 'protected'],
  ['writing a missing .keelson of the second root is refused', join(artifacts, '.keelson', 'x'), 'write', 'protected'],
  ['reading .keelson is allowed', '.keelson/workflows', 'read', join(root, '.keelson', 'workflows')],
  ['.gitignore is not .git', '.gitignore', 'write', join(root, '.gitignore')],
  ['.keelsonrc is not .keelson', 'sub/.keelsonrc', 'write', join(root, 'sub', '.keelsonrc')],
];

describe('confinePath: one row per case', () => {
  it.each(rows)('%s (%s, %s)', (_name, path, access, expected) => {
    const run = () => confinePath(path, { roots, cwd: root, access });
    if (expected === 'outside' || expected === 'protected' || expected === 'unresolvable') {
      let error: unknown;
      try {
        run();
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(ConfinementError);
      expect(error).toMatchObject({ code: 'FORBIDDEN', reason: expected, path });
      expect((error as Error).message).toContain(`'${path}'`);
    } else {
      expect(run()).toBe(expected);
    }
  });
});

describe('confinePath without roots', () => {
  it('confines nothing to roots but still refuses writes into the cwd’s .git and .keelson', () => {
    expect(confinePath(join(outside, 'secret.txt'), { roots: [], cwd: root })).toBe(join(outside, 'secret.txt'));
    expect(() => confinePath('.git/hooks/post-checkout', { roots: [], cwd: root, access: 'write' })).toThrow(/is inside .*\/root\/\.git: agents may read/);
  });

  it('names the path, the roots and the reason in its message', () => {
    expect(() => confinePath('../x', { roots: [root], cwd: root, what: 'attachment' })).toThrow(`attachment '../x' resolves outside the allowed directories (${root})`);
    expect(() => confinePath('../x', { roots: [root, outside], cwd: root })).toThrow(`path '../x' resolves outside the allowed directories (${root}, ${outside})`);
    expect(() => confinePath('../x', { roots: [root], cwd: root, scope: "the turn's allowed directories" })).toThrow("path '../x' resolves outside the turn's allowed directories");
  });
});

describe('canonicalPath and isInside', () => {
  it('expands ~ and resolves relative to the cwd', () => {
    expect(canonicalPath('~', root)).toBe(canonicalPath(homedir(), '/'));
    expect(canonicalPath('sub', root)).toBe(join(root, 'sub'));
  });

  it('compares whole components', () => {
    expect(isInside('/a/b', '/a/b')).toBe(true);
    expect(isInside('/a/b', '/a/b/c')).toBe(true);
    expect(isInside('/a/b', '/a/bc')).toBe(false);
    expect(isInside('/a/b', '/a')).toBe(false);
    expect(isInside('/a/b', '/a/c')).toBe(false);
    expect(isInside('/a/b', '/')).toBe(false);
    expect(isInside('/a/b', '/a/b/..c')).toBe(true);
  });
});

describe('canonicalPath edges', () => {
  it('expands ~/ to a path below the home directory', () => {
    expect(canonicalPath('~/.ssh/id_rsa', root)).toBe(join(canonicalPath(homedir(), '/'), '.ssh', 'id_rsa'));
  });

  it('resolves a relative cwd against the process cwd first', () => {
    expect(canonicalPath('x', 'keelson-no-such-dir')).toBe(canonicalPath(resolve('keelson-no-such-dir', 'x'), '/'));
  });

  it('follows a chain of 40 symlinks (the kernel’s limit) and refuses a 41st, naming the path as given', () => {
    const chain = join(base, 'chain');
    mkdirSync(chain);
    writeFileSync(join(chain, 'end.txt'), 'end');
    symlinkSync('end.txt', join(chain, 'l40'));
    for (let i = 39; i >= 0; i--) symlinkSync(`l${i + 1}`, join(chain, `l${i}`));
    expect(canonicalPath('l1', chain)).toBe(join(chain, 'end.txt'));
    let error: unknown;
    try {
      canonicalPath('l0', chain);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(SymlinkLoopError);
    expect(error).toMatchObject({ name: 'SymlinkLoopError', message: "too many levels of symbolic links resolving 'l0'" });
  });
});

describe('confinePath options and messages', () => {
  it('resolves against the first root without a cwd, and against the process cwd without roots either', () => {
    expect(confinePath('sub/ok.txt', { roots: [root, artifacts] })).toBe(join(root, 'sub', 'ok.txt'));
    expect(confinePath('keelson-no-such-file', { roots: [] })).toBe(canonicalPath(resolve('keelson-no-such-file'), '/'));
  });

  it('resolves a relative root against the cwd', () => {
    expect(confinePath(join(root, 'sub', 'ok.txt'), { roots: ['sub'], cwd: root })).toBe(join(root, 'sub', 'ok.txt'));
    expect(() => confinePath(join(root, '.gitignore'), { roots: ['sub'], cwd: root })).toThrow(`path '${join(root, '.gitignore')}' resolves outside the allowed directories (sub)`);
  });

  it('names a symlink loop as unresolvable, with the path and the reason in its details', () => {
    let error: unknown;
    try {
      confinePath('loop-a/x', { roots, cwd: root, what: 'file' });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfinementError);
    expect(error).toMatchObject({ message: "file 'loop-a/x': too many levels of symbolic links resolving 'loop-a/x'", details: { reason: 'unresolvable', path: 'loop-a/x' } });
  });

  it('names the protected directory of the root the path is in', () => {
    expect(() => confinePath(join(artifacts, '.keelson', 'x'), { roots, cwd: root, access: 'write', what: 'output' })).toThrow(
      `output '${join(artifacts, '.keelson', 'x')}' is inside ${join(artifacts, '.keelson')}: agents may read .git and .keelson directories but not write them`,
    );
    expect(protectedDirOf([root, artifacts], join(artifacts, '.git', 'config'))).toBe(join(artifacts, '.git'));
    expect(protectedDirOf([root], join(root, 'sub', 'ok.txt'))).toBeUndefined();
  });
});

describe('checkPath', () => {
  it('answers the canonical path, or the refusal instead of throwing it', () => {
    expect(checkPath('inside/ok.txt', { roots, cwd: root })).toEqual({ ok: true, path: join(root, 'sub', 'ok.txt') });
    const refused = checkPath('leak.txt', { roots, cwd: root });
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.error).toMatchObject({ reason: 'outside', path: 'leak.txt' });
  });

  it('throws what is not a refusal (a malformed call)', () => {
    expect(() => checkPath('x', { roots: undefined as never, cwd: root })).toThrow(TypeError);
  });
});
