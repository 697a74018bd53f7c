import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { aiAttributionIn } from '../src/write/attribution';
import { landReviewedSha, MergeRefused } from '../src/write/merge';
import { publishWriterBranch } from '../src/write/publish';
import { commitWriterTurn, cutWriterWorktree, detectWriteBase, pruneWriterBranch } from '../src/write/writeBase';

const dir = mkdtempSync(join(tmpdir(), 'keelson-swarm-write-'));
const gitconfig = join(dir, 'gitconfig');
writeFileSync(gitconfig, '[user]\n\tname = Test\n\temail = test@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
const env = { ...process.env, GIT_CONFIG_GLOBAL: gitconfig, GIT_CONFIG_NOSYSTEM: '1' };
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const g = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();
let n = 0;
/** A repository with one commit on main, and a worktree on branch `w` cut from it. */
function repo(): { root: string; wt: string } {
  const root = join(dir, `root-${++n}`);
  g(dir, 'init', '--quiet', root);
  writeFileSync(join(root, 'README.md'), 'hello\n');
  g(root, 'add', '.');
  g(root, 'commit', '--quiet', '-m', 'Initial');
  const wt = join(dir, `wt-${n}`);
  g(root, 'worktree', 'add', '--quiet', '-b', 'w', wt, 'HEAD');
  return { root, wt };
}
const commit = (cwd: string, file: string, text: string, message = `write ${file}`) => {
  writeFileSync(join(cwd, file), text);
  g(cwd, 'add', '.');
  g(cwd, 'commit', '--quiet', '-m', message);
  return g(cwd, 'rev-parse', 'HEAD');
};
const land = (r: { root: string }, sha: string) => landReviewedSha({ root: r.root, base: 'main', branch: 'w', sha, agent: 'writer', env });

describe('write mode without origin: chat_merge lands a reviewed SHA on the root\'s branch', () => {
  it('fast-forwards when the base has not moved', async () => {
    const r = repo();
    const sha = commit(r.wt, 'a.txt', 'a\n');
    await expect(land(r, sha)).resolves.toBe(`merged ${sha.slice(0, 12)} from writer into main (fast-forward, 1 commit(s))`);
    expect(g(r.root, 'rev-parse', 'HEAD')).toBe(sha);
    expect(await pruneWriterBranch(r.root, 'w', 'main', env)).toBe('deleted');
  });

  it('makes a merge commit when the base moved, and a later writer inherits it', async () => {
    const r = repo();
    commit(r.root, 'root.txt', 'root\n');
    const sha = commit(r.wt, 'b.txt', 'b\n');
    expect(await land(r, sha)).toMatch(/merge commit [0-9a-f]{12}, 1 commit/);
    expect(g(r.root, 'log', '--format=%s', '-1')).toBe(`Merge writer's ${sha.slice(0, 12)} into main`);
    const later = join(dir, `later-${n}`);
    g(r.root, 'worktree', 'add', '--quiet', '-b', 'w2', later, 'HEAD');
    expect(existsSync(join(later, 'b.txt'))).toBe(true);
  });

  it('aborts on a conflict and leaves the root as it was', async () => {
    const r = repo();
    const before = commit(r.root, 'README.md', 'root says\n');
    const sha = commit(r.wt, 'README.md', 'writer says\n');
    await expect(land(r, sha)).rejects.toThrow(/conflicts in README.md: aborted, nothing changed/);
    expect(g(r.root, 'rev-parse', 'HEAD')).toBe(before);
    expect(g(r.root, 'status', '--porcelain')).toBe('');
    expect(existsSync(join(r.root, '.git', 'MERGE_HEAD'))).toBe(false);
    expect(await pruneWriterBranch(r.root, 'w', 'main', env)).toBe('kept');
  });

  it('refuses a dirty root, a SHA that is not the writer\'s head, and a commit carrying AI attribution', async () => {
    const r = repo();
    const reviewed = commit(r.wt, 'c.txt', 'c\n');
    writeFileSync(join(r.root, 'stray.txt'), 'x\n');
    await expect(land(r, reviewed)).rejects.toThrow(/root checkout is not clean/);
    rmSync(join(r.root, 'stray.txt'));
    commit(r.wt, 'c.txt', 'c changed after the review\n');
    await expect(land(r, reviewed)).rejects.toThrow(/is not the head of writer's branch w/);
    const attributed = commit(r.wt, 'd.txt', 'd\n', 'Add d\n\nCo-Authored-By: Claude <noreply@anthropic.com>');
    await expect(land(r, attributed)).rejects.toBeInstanceOf(MergeRefused);
    await expect(land(r, attributed)).rejects.toThrow(/carries AI attribution \("Co-Authored-By: Claude <noreply@anthropic.com>"\)/);
    expect(g(r.root, 'log', '--format=%s')).toBe('Initial');
  });

  it('knows AI attribution when it sees it, and plain co-authors when it does not', () => {
    expect(aiAttributionIn('Fix\n\n🤖 Generated with Claude Code')).toBeDefined();
    expect(aiAttributionIn('Fix\n\nCo-authored-by: GitHub Copilot <copilot@github.com>')).toBeDefined();
    expect(aiAttributionIn('Fix\n\nCo-authored-by: Ada Lovelace <ada@example.com>')).toBeUndefined();
  });
});

describe('write bases', () => {
  it('without origin: the root\'s symbolic HEAD branch', async () => {
    const r = repo();
    expect(await detectWriteBase(r.root, env)).toEqual({ origin: false, branch: 'main' });
    g(r.root, 'checkout', '--quiet', '--detach');
    await expect(detectWriteBase(r.root, env)).rejects.toThrow(/HEAD is detached/);
  });

  it('with origin (a local bare repository): the fetched remote default branch, even when the local one is stale', async () => {
    const bare = join(dir, 'origin.git');
    g(dir, 'init', '--quiet', '--bare', bare);
    const seed = join(dir, 'seed');
    g(dir, 'clone', '--quiet', bare, seed);
    commit(seed, 'one.txt', '1\n');
    g(seed, 'push', '--quiet', 'origin', 'main');
    const root = join(dir, 'clone');
    g(dir, 'clone', '--quiet', bare, root);
    const stale = g(root, 'rev-parse', 'HEAD');
    const upstream = commit(seed, 'two.txt', '2\n');
    g(seed, 'push', '--quiet', 'origin', 'main');
    const base = await detectWriteBase(root, env);
    expect(base).toEqual({ origin: true, branch: 'main', remoteRef: 'origin/main', localOrigin: true });
    const wt = join(dir, 'origin-writer');
    g(root, 'worktree', 'add', '--quiet', '-b', 'ow', wt, 'HEAD');
    expect(g(wt, 'rev-parse', 'HEAD')).toBe(stale);
    expect(await cutWriterWorktree(wt, base, env)).toBe(upstream);
    writeFileSync(join(wt, 'three.txt'), '3\n');
    const made = await commitWriterTurn(wt, { message: 'writer turn 1', author: 'sw-writer', email: 'sw-writer@swarm.keelson.invalid' }, env);
    expect(made).toEqual({ sha: g(wt, 'rev-parse', 'HEAD'), files: 1 });
    expect(g(wt, 'log', '-1', '--format=%an <%ae>')).toBe('sw-writer <sw-writer@swarm.keelson.invalid>');
    expect(await commitWriterTurn(wt, { message: 'nothing', author: 'a', email: 'a@b' }, env)).toBeUndefined();
  });

  /** A project cloned from a local bare origin holding one commit on main; a fresh one per test. */
  function originProject(name: string): { bare: string; root: string } {
    const bare = join(dir, `${name}.git`);
    g(dir, 'init', '--quiet', '--bare', bare);
    const seed = join(dir, `${name}-seed`);
    g(dir, 'clone', '--quiet', bare, seed);
    commit(seed, 'one.txt', '1\n');
    g(seed, 'push', '--quiet', 'origin', 'main');
    const root = join(dir, `${name}-root`);
    g(dir, 'clone', '--quiet', bare, root);
    return { bare, root };
  }
  /** A script that leaves a marker when something runs it (then behaves as git-upload-pack). */
  function plantedCommand(name: string): { path: string; marker: string } {
    const marker = join(dir, `${name}.ran`);
    const path = join(dir, `${name}.sh`);
    writeFileSync(path, `#!/bin/sh\ntouch ${marker}\nexec git-upload-pack "$@"\n`, { mode: 0o755 });
    return { path, marker };
  }

  it("never runs the project's remote.origin.uploadpack when fetching a local origin (plain git does)", async () => {
    const { root } = originProject('uploadpack');
    const planted = plantedCommand('uploadpack');
    g(root, 'config', 'remote.origin.uploadpack', planted.path);
    expect(await detectWriteBase(root, env)).toMatchObject({ origin: true, branch: 'main' });
    const wt = join(dir, 'uploadpack-writer');
    g(root, 'worktree', 'add', '--quiet', '-b', 'uw', wt, 'HEAD');
    await cutWriterWorktree(wt, { origin: true, branch: 'main', remoteRef: 'origin/main', localOrigin: true }, env);
    expect(existsSync(planted.marker)).toBe(false);
    // The control: git without the mesh's pins runs it.
    g(root, 'fetch', '--quiet', 'origin');
    expect(existsSync(planted.marker)).toBe(true);
  });

  it("refuses an origin whose default branch reads as an option, and never passes a branch name where git parses options", async () => {
    const { bare, root } = originProject('optionbranch');
    const planted = plantedCommand('optionbranch');
    const evil = `--upload-pack=${planted.path}`;
    g(bare, 'update-ref', `refs/heads/${evil}`, 'refs/heads/main');
    g(bare, 'symbolic-ref', 'HEAD', `refs/heads/${evil}`);
    await expect(detectWriteBase(root, env)).rejects.toThrow(/not a branch name write mode accepts/);
    // Even a base carrying such a name goes to git inside a full refspec, never as an option.
    const wt = join(dir, 'optionbranch-writer');
    g(root, 'worktree', 'add', '--quiet', '-b', 'obw', wt, 'HEAD');
    await cutWriterWorktree(wt, { origin: true, branch: evil, remoteRef: `origin/${evil}`, localOrigin: true }, env).catch(() => undefined);
    expect(existsSync(planted.marker)).toBe(false);
    // The control: the same name as a bare fetch argument runs the planted command.
    execFileSync('git', ['fetch', '--quiet', 'origin', evil], { cwd: root, env, stdio: 'ignore' });
    expect(existsSync(planted.marker)).toBe(true);
  });
});

describe('write mode with origin: publishing a writer\'s branch (the project opted in)', () => {
  /** A bare origin, a clone of it as the root, and branch `w` in the root with one commit over origin/main. */
  async function published(message: string) {
    const bare = join(dir, `origin-${++n}.git`);
    g(dir, 'init', '--quiet', '--bare', '--initial-branch=main', bare);
    const root = join(dir, `clone-${n}`);
    g(dir, 'clone', '--quiet', bare, root);
    commit(root, 'README.md', 'hello\n', 'Initial');
    g(root, 'push', '--quiet', 'origin', 'main');
    const base = await detectWriteBase(root, env);
    g(root, 'checkout', '--quiet', '-b', 'w');
    const sha = commit(root, 'a.txt', 'a\n', message);
    g(root, 'checkout', '--quiet', 'main');
    return { bare, root, base, sha };
  }
  const remoteHead = (bare: string, ref: string) => execFileSync('git', ['--git-dir', bare, 'rev-parse', '--verify', '--quiet', ref], { env, encoding: 'utf8' }).trim();

  it('pushes the branch and reports the draft the command opened; a failing command leaves the branch pushed and says why', async () => {
    const p = await published('write a.txt');
    const printer = [process.execPath, '-e', 'console.log("draft for " + process.argv[2] + " at https://forge.example/pull/3")', '--', '--draft', '{branch}'];
    const out = await publishWriterBranch({ root: p.root, base: p.base, branch: 'w', title: 't', body: 'b', settings: { projects: [], command: printer }, env });
    expect(out).toEqual({ branch: 'w', commits: 1, pushed: true, pullRequest: 'https://forge.example/pull/3', error: null });
    expect(remoteHead(p.bare, 'refs/heads/w')).toBe(p.sha);

    const failing = [process.execPath, '-e', 'process.stderr.write("not authenticated"); process.exit(4)', '--', '--draft'];
    const again = await publishWriterBranch({ root: p.root, base: p.base, branch: 'w', title: 't', body: 'b', settings: { projects: [], command: failing }, env });
    expect(again).toMatchObject({ pushed: true, pullRequest: null, error: expect.stringMatching(/^pushed; the draft pull request command failed: .*not authenticated/) });
  });

  it('pushes nothing when a commit carries AI attribution', async () => {
    const p = await published('write a.txt\n\nCo-Authored-By: Claude <noreply@anthropic.com>');
    const out = await publishWriterBranch({ root: p.root, base: p.base, branch: 'w', title: 't', body: 'b', settings: { projects: [], command: ['true', '--draft'] }, env });
    expect(out).toMatchObject({ pushed: false, pullRequest: null, error: expect.stringMatching(/^not pushed: commit [0-9a-f]{12} carries AI attribution/) });
    expect(() => remoteHead(p.bare, 'refs/heads/w')).toThrow();
  });
});
