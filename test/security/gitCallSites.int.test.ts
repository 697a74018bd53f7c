import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MessageChunk, ToolContext } from '@keelson/ribs-contract';
import { codingTools, createExec } from '@keelson/host';
import { createSandbox, runGit } from '@keelson/platform';
import { commitWriterTurn, cutWriterWorktree, detectWriteBase, pruneWriterBranch } from '@keelson/swarms';
import { readGitState, missingGitIdentity } from '@keelson/subgraph-projects/src/git/gitState';
import { gitVersion, inspectProject, recentCommits } from '@keelson/rib-projects/src/inspect';

// A repository whose own config, hooks and remote name a command for every key git runs one from,
// each leaving a marker file; then every call site of the mesh's git (test/gitCallSites.unit.test.ts
// lists them) is driven against it. Errors are allowed (a pinned diff driver fails the diff); a
// marker is not. A control run of plain git shows the planted keys do run, so the test can fail.

const base = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-git-sites-')));
const markers = join(base, 'markers');
const repo = join(base, 'repo');
const origin = join(base, 'origin.git');
const hooks = join(base, 'hooks');
const globalConfig = join(base, 'gitconfig');
mkdirSync(markers);
mkdirSync(hooks);
writeFileSync(globalConfig, '[user]\n\tname = Mesh Test\n\temail = mesh@example.com\n[init]\n\tdefaultBranch = main\n');
const env = { PATH: process.env.PATH!, HOME: base, GIT_CONFIG_GLOBAL: globalConfig };

const plain = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'protocol.file.allow=always', ...args], { cwd, env: { ...env, GIT_CONFIG_NOSYSTEM: '1' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const mark = (name: string) => `touch ${join(markers, name)}`;
const ran = () => readdirSync(markers).sort();

/** Every repository-local key that names a program git may run. */
const PLANTED: Record<string, string> = {
  'core.fsmonitor': mark('fsmonitor'),
  'core.hooksPath': hooks,
  'core.pager': mark('pager'),
  'pager.log': mark('pager.log'),
  'core.editor': mark('editor'),
  'sequence.editor': mark('sequence.editor'),
  'core.askPass': mark('askpass'),
  'credential.helper': `!${mark('credential.helper')}`,
  'core.sshCommand': mark('sshCommand'),
  'core.gitProxy': mark('gitProxy'),
  'core.alternateRefsCommand': mark('alternateRefsCommand'),
  'diff.external': mark('diff.external'),
  'diff.evil.textconv': mark('textconv'),
  'diff.evil.command': mark('diff.command'),
  'filter.evil.clean': `${mark('filter.clean')}; cat`,
  'filter.evil.smudge': `${mark('filter.smudge')}; cat`,
  'filter.evil.process': mark('filter.process'),
  'merge.evil.driver': mark('merge.driver'),
  'commit.gpgSign': 'true',
  'gpg.program': mark('gpg.program'),
  'remote.origin.uploadpack': `${mark('uploadpack')}; git-upload-pack`,
  'remote.origin.receivepack': `${mark('receivepack')}; git-receive-pack`,
};
const HOOKS = ['pre-commit', 'commit-msg', 'prepare-commit-msg', 'post-commit', 'post-checkout', 'post-merge', 'pre-push', 'reference-transaction', 'post-index-change', 'pre-auto-gc'];

beforeAll(() => {
  const seed = join(base, 'seed');
  mkdirSync(seed);
  plain(seed, 'init', '-q', '-b', 'main');
  writeFileSync(join(seed, '.gitattributes'), '* filter=evil diff=evil merge=evil\n');
  writeFileSync(join(seed, 'a.txt'), 'needle one\n');
  plain(seed, 'add', '.');
  plain(seed, 'commit', '-q', '-m', 'seed');
  plain(base, 'clone', '-q', '--bare', seed, origin);
  plain(base, 'clone', '-q', origin, repo);
  for (const name of HOOKS) {
    for (const dir of [hooks, join(repo, '.git', 'hooks')]) {
      writeFileSync(join(dir, name), `#!/bin/sh\n${mark(`hook.${name}`)}\n`);
      chmodSync(join(dir, name), 0o755);
    }
  }
  for (const [key, value] of Object.entries(PLANTED)) plain(repo, 'config', key, value);
  writeFileSync(join(repo, 'a.txt'), 'needle two\n');
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe("a repository's config, hooks and remote run nothing through any mesh git call site", () => {
  it('control: plain git runs what was planted', () => {
    for (const args of [['status'], ['fetch', '-q', 'origin']]) {
      try {
        plain(repo, ...args);
      } catch {
        // a planted command may fail the call; what ran is in the markers
      }
    }
    const seen = ran();
    rmSync(markers, { recursive: true });
    mkdirSync(markers);
    expect(seen).toEqual(expect.arrayContaining(['filter.process', 'fsmonitor', 'uploadpack']));
  });

  it('drives every call site: nothing runs', async () => {
    const failures: string[] = [];
    const attempt = async (what: string, call: () => Promise<unknown>) => {
      try {
        await call();
      } catch (err) {
        failures.push(`${what}: ${(err as Error).message.split('\n')[0]}`);
      }
    };
    const file = { cwd: repo, env, allowProtocols: ['file'] };

    // platform runGit, as the projects subgraph, doctor and swarm write mode call it.
    await attempt('runGit status', () => runGit(['status', '--porcelain'], { cwd: repo, env }));
    await attempt('runGit log -p', () => runGit(['log', '-p', '-1'], { cwd: repo, env }));
    await attempt('runGit diff', () => runGit(['diff'], { cwd: repo, env }));
    await attempt('runGit fetch', () => runGit(['fetch', '-q', 'origin'], file));
    await attempt('runGit ls-remote', () => runGit(['ls-remote', 'origin'], file));
    await attempt('runGit worktree add', () => runGit(['worktree', 'add', '-q', '-b', 'lease', join(base, 'lease'), 'HEAD'], { cwd: repo, env }));
    // The projects subgraph.
    await attempt('readGitState', () => readGitState(repo, env));
    await attempt('missingGitIdentity', () => missingGitIdentity(repo, env));
    // Swarm write mode: base (fetch + ls-remote of a local origin), a writer's worktree, its commit, a push, the prune.
    await attempt('swarm write', async () => {
      const wb = await detectWriteBase(repo, env);
      const wt = join(base, 'writer');
      await runGit(['worktree', 'add', '-q', '-b', 'writer', wt, 'HEAD'], { cwd: repo, env });
      await cutWriterWorktree(wt, wb, env);
      writeFileSync(join(wt, 'b.txt'), 'a writer was here\n');
      await commitWriterTurn(wt, { message: 'writer turn', author: 'agent', email: 'agent@example.com' }, env);
      await runGit(['push', '-q', 'origin', 'HEAD:refs/heads/pushed'], { ...file, cwd: wt });
      await pruneWriterBranch(repo, 'writer', wb.branch, env);
    });
    // The rib host's exec (the projects rib's board) and the Grep tool.
    const exec = createExec();
    await attempt('rib exec status', () => exec.runText('git', ['-C', repo, 'status']));
    await attempt('rib exec log -p', () => exec.runText('git', ['-C', repo, 'log', '-p', '-1']));
    await attempt('projects rib inspect', () => inspectProject(exec, { id: 'p', name: 'p', rootPath: repo } as Parameters<typeof inspectProject>[1]));
    await attempt('projects rib commits', () => recentCommits(exec, repo, 5));
    await attempt('projects rib git version', () => gitVersion(exec));
    await attempt('Grep', async () => {
      const grep = codingTools({ env, sandbox: createSandbox({ mode: 'off' }) }).find((t) => t.name === 'Grep')!;
      const chunks: MessageChunk[] = [];
      const ctx: ToolContext = { cwd: repo, allowedDirectories: [repo], emit: (c) => chunks.push(c), abortSignal: new AbortController().signal };
      await grep.execute({ pattern: 'needle' }, ctx);
      expect(JSON.stringify(chunks)).toContain('needle two');
    });

    expect(ran()).toEqual([]);
    // The calls themselves worked where nothing had to be refused (a pinned diff driver fails a diff).
    expect(failures.filter((f) => !/^runGit (log -p|diff)|^rib exec log -p/.test(f))).toEqual([]);
  });
});
