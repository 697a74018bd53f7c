import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GitError, gitInvocation, runGit } from './runGit';

jest.setTimeout(60_000);

let tmp: string;
/** The operator's environment as the mesh would pass it: identity from a global config of its own. */
let env: NodeJS.ProcessEnv;

/** Plain git, as an attacker's checkout or a user's shell would run it: the control for every case. */
function plainGit(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A marker path a malicious command would create, and a shell command creating it. */
function marker(name: string): { path: string; touch: string } {
  const path = join(tmp, 'markers', name);
  return { path, touch: `touch '${path}'` };
}

/** A repository with one committed file `a.txt` under a `*.txt` attribute line. */
function makeRepo(name: string, attributes = ''): string {
  const repo = join(tmp, name);
  mkdirSync(repo, { recursive: true });
  plainGit(repo, 'init', '--quiet', '--template=');
  writeFileSync(join(repo, 'a.txt'), 'content\n');
  if (attributes) writeFileSync(join(repo, '.gitattributes'), attributes);
  plainGit(repo, 'add', '.');
  plainGit(repo, 'commit', '--quiet', '-m', 'fixture');
  return repo;
}

/** Makes git unsure whether `file` changed, so `status` re-reads it (through any clean filter). */
function makeRacy(file: string, seconds: number) {
  utimesSync(file, seconds, seconds);
}

beforeAll(() => {
  tmp = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-git-')));
  mkdirSync(join(tmp, 'markers'));
  const gitconfig = join(tmp, 'gitconfig');
  writeFileSync(gitconfig, '[user]\n\tname = Keelson Test\n\temail = test@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
  env = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('GIT_'))),
    GIT_CONFIG_GLOBAL: gitconfig,
    GIT_CONFIG_NOSYSTEM: '1',
  };
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('runGit: a repository config never runs a command', () => {
  it('does not run core.fsmonitor on status (plain git does)', async () => {
    const repo = makeRepo('fsmonitor');
    const m = marker('fsmonitor');
    plainGit(repo, 'config', 'core.fsmonitor', `${m.touch}; false`);

    const { stdout } = await runGit(['status', '--porcelain=v2', '--branch'], { cwd: repo, env });
    expect(stdout).toContain('# branch.head main');
    expect(existsSync(m.path)).toBe(false);

    plainGit(repo, 'status');
    expect(existsSync(m.path)).toBe(true);
  });

  it('does not run a post-checkout hook on worktree add, from .git/hooks or a configured hooksPath (plain git does)', async () => {
    const repo = makeRepo('hooks');
    const inRepo = marker('post-checkout-hooks-dir');
    const viaConfig = marker('post-checkout-hooks-path');
    mkdirSync(join(repo, '.git', 'hooks'), { recursive: true });
    writeFileSync(join(repo, '.git', 'hooks', 'post-checkout'), `#!/bin/sh\n${inRepo.touch}\n`);
    chmodSync(join(repo, '.git', 'hooks', 'post-checkout'), 0o755);

    await runGit(['worktree', 'add', '--quiet', '-b', 'lease-1', join(tmp, 'wt-1'), 'HEAD'], { cwd: repo, env });
    expect(readFileSync(join(tmp, 'wt-1', 'a.txt'), 'utf8')).toBe('content\n');
    expect(existsSync(inRepo.path)).toBe(false);

    mkdirSync(join(repo, 'evil-hooks'));
    writeFileSync(join(repo, 'evil-hooks', 'post-checkout'), `#!/bin/sh\n${viaConfig.touch}\n`);
    chmodSync(join(repo, 'evil-hooks', 'post-checkout'), 0o755);
    plainGit(repo, 'config', 'core.hooksPath', join(repo, 'evil-hooks'));
    await runGit(['worktree', 'add', '--quiet', '-b', 'lease-2', join(tmp, 'wt-2'), 'HEAD'], { cwd: repo, env });
    expect(existsSync(viaConfig.path)).toBe(false);

    plainGit(repo, 'worktree', 'add', '--quiet', '-b', 'control', join(tmp, 'wt-control'), 'HEAD');
    expect(existsSync(viaConfig.path)).toBe(true);
  });

  it('pins filter drivers the repository declares: smudge on worktree add and clean on status pass content through', async () => {
    const repo = makeRepo('filters', '*.txt filter=evil\n*.md filter=a=b\n');
    writeFileSync(join(repo, 'b.md'), 'md\n');
    plainGit(repo, 'add', 'b.md');
    plainGit(repo, 'commit', '--quiet', '-m', 'b');
    const smudge = marker('filter-smudge');
    const clean = marker('filter-clean');
    const processMarker = marker('filter-process');
    const equals = marker('filter-smudge-eq');
    plainGit(repo, 'config', 'filter.evil.smudge', `${smudge.touch}; cat`);
    plainGit(repo, 'config', 'filter.evil.clean', `${clean.touch}; cat`);
    plainGit(repo, 'config', 'filter.evil.process', processMarker.touch);
    plainGit(repo, 'config', 'filter.evil.required', 'true');
    // A driver name with "=" in it: `-c` would split there, so the pin must not.
    plainGit(repo, 'config', 'filter.a=b.smudge', `${equals.touch}; cat`);

    const invocation = await gitInvocation(['worktree', 'add', 'x'], { cwd: repo, env });
    expect(invocation.args).toEqual(expect.arrayContaining(['--config-env=filter.a=b.smudge=KEELSON_GIT_PIN_EMPTY', '--config-env=filter.evil.required=KEELSON_GIT_PIN_FALSE']));
    await runGit(['worktree', 'add', '--quiet', '-b', 'filtered', join(tmp, 'wt-filters'), 'HEAD'], { cwd: repo, env });
    expect(readFileSync(join(tmp, 'wt-filters', 'a.txt'), 'utf8')).toBe('content\n');
    expect(readFileSync(join(tmp, 'wt-filters', 'b.md'), 'utf8')).toBe('md\n');
    makeRacy(join(repo, 'a.txt'), 1_000_000_000);
    await runGit(['status', '--porcelain'], { cwd: repo, env });
    expect([smudge.path, equals.path, clean.path, processMarker.path].filter(existsSync)).toEqual([]);

    // The drivers are live: plain git runs them (the process driver unset, so clean and smudge run).
    plainGit(repo, 'config', '--unset', 'filter.evil.process');
    makeRacy(join(repo, 'a.txt'), 1_100_000_000);
    plainGit(repo, 'status', '--porcelain');
    plainGit(repo, 'worktree', 'add', '--quiet', '-b', 'control-filters', join(tmp, 'wt-filters-control'), 'HEAD');
    expect([smudge.path, equals.path, clean.path].filter(existsSync)).toEqual([smudge.path, equals.path, clean.path]);
  });

  it('pins diff drivers, diff.external and textconv: a diff that would run one fails instead', async () => {
    const repo = makeRepo('diffs', '*.txt diff=evil\n');
    const textconv = marker('textconv');
    const external = marker('diff-external');
    plainGit(repo, 'config', 'diff.evil.textconv', `sh -c '${textconv.touch}; cat "$0"'`);
    plainGit(repo, 'config', 'diff.external', `sh -c '${external.touch}'`);
    writeFileSync(join(repo, 'a.txt'), 'changed\n');

    await expect(runGit(['log', '-p', '--textconv', '-1'], { cwd: repo, env })).rejects.toBeInstanceOf(GitError);
    await expect(runGit(['diff'], { cwd: repo, env })).rejects.toBeInstanceOf(GitError);
    expect(existsSync(textconv.path)).toBe(false);
    expect(existsSync(external.path)).toBe(false);

    plainGit(repo, 'diff');
    expect(existsSync(external.path)).toBe(true);
  });

  it('pins the pager, editor, askpass, credential helpers and ssh command over what a repository names', async () => {
    const repo = makeRepo('misc');
    const pager = marker('pager');
    const askpass = marker('askpass');
    plainGit(repo, 'config', 'core.pager', pager.touch);
    plainGit(repo, 'config', 'pager.log', pager.touch);
    plainGit(repo, 'config', 'core.askPass', askpass.touch);
    plainGit(repo, 'config', 'credential.helper', `!${askpass.touch}`);
    const invocation = await gitInvocation(['log', '-1'], { cwd: repo, env });
    expect(invocation.env).toMatchObject({ GIT_PAGER: 'cat', GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '', GIT_EDITOR: 'true', GIT_CONFIG_NOSYSTEM: '1' });
    expect(invocation.env.GIT_SSH_COMMAND).toBe('ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new');
    expect(invocation.args).toEqual(expect.arrayContaining(['--no-pager', 'core.hooksPath=/dev/null', 'core.fsmonitor=false', 'credential.helper=']));
    await runGit(['log', '-1'], { cwd: repo, env });
    expect([pager.path, askpass.path].filter(existsSync)).toEqual([]);
  });
});

describe('runGit: transports, environment, time', () => {
  it('allows https and ssh only: file and ext are refused even where a config allows them', async () => {
    const source = makeRepo('source');
    const ext = marker('ext-transport');
    const globalAllowing = join(tmp, 'gitconfig-allowing');
    writeFileSync(globalAllowing, `${readFileSync(env.GIT_CONFIG_GLOBAL!, 'utf8')}[protocol]\n\tallow = always\n[protocol "ext"]\n\tallow = always\n`);
    const permissive = { ...env, GIT_CONFIG_GLOBAL: globalAllowing, GIT_ALLOW_PROTOCOL: 'file:ext' };

    const file = await runGit(['clone', '--quiet', `file://${source}`, join(tmp, 'clone-file')], { cwd: tmp, env: permissive }).catch((e: GitError) => e);
    expect(file).toBeInstanceOf(GitError);
    expect((file as GitError).stderr).toMatch(/transport 'file' not allowed/);
    const local = await runGit(['clone', '--quiet', source, join(tmp, 'clone-local')], { cwd: tmp, env: permissive }).catch((e: GitError) => e);
    expect((local as GitError).stderr).toMatch(/transport 'file' not allowed/);
    const extRun = await runGit(['clone', '--quiet', `ext::sh -c ${ext.touch.replace(/ /g, '% ')}`, join(tmp, 'clone-ext')], { cwd: tmp, env: permissive }).catch(
      (e: GitError) => e,
    );
    expect((extRun as GitError).stderr).toMatch(/transport 'ext' not allowed/);
    expect(existsSync(ext.path)).toBe(false);
    expect(existsSync(join(tmp, 'clone-file'))).toBe(false);

    // The explicit test option opens file:// (nothing in the mesh passes it).
    await runGit(['clone', '--quiet', `file://${source}`, join(tmp, 'clone-allowed')], { cwd: tmp, env, allowProtocols: ['file'] });
    expect(readFileSync(join(tmp, 'clone-allowed', 'a.txt'), 'utf8')).toBe('content\n');
  });

  it('ignores GIT_* surprises in the environment: GIT_DIR, GIT_CONFIG_PARAMETERS, GIT_TRACE', async () => {
    const repo = makeRepo('env-target');
    const other = makeRepo('env-other');
    plainGit(other, 'commit', '--quiet', '--allow-empty', '-m', 'other');
    const trace = join(tmp, 'trace.log');
    const surprising = {
      ...env,
      GIT_DIR: join(other, '.git'),
      GIT_CONFIG_PARAMETERS: `'core.hooksPath'='${join(tmp, 'nowhere')}'`,
      GIT_TRACE: trace,
      GIT_TRACE_CURL: trace,
    };
    const head = (await runGit(['rev-parse', 'HEAD'], { cwd: repo, env: surprising })).stdout.trim();
    expect(head).toBe(plainGit(repo, 'rev-parse', 'HEAD'));
    expect(head).not.toBe(plainGit(other, 'rev-parse', 'HEAD'));
    expect(existsSync(trace)).toBe(false);
  });

  it('kills git and its helpers as a process group on timeout', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((s) => {
      sockets.add(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    const processes = () =>
      execFileSync('ps', ['-eo', 'stat=,args='], { encoding: 'utf8' })
        .split('\n')
        .filter((line) => line.includes(`127.0.0.1:${port}`) && !line.trim().startsWith('Z'));
    try {
      const started = Date.now();
      const pending = runGit(['clone', '--quiet', `https://127.0.0.1:${port}/stalled.git`, join(tmp, 'stalled')], { cwd: tmp, env, timeoutMs: 1500 });
      await new Promise((r) => setTimeout(r, 700));
      const whileStalled = processes();
      const error = await pending.catch((e: GitError) => e);
      expect(whileStalled.length).toBeGreaterThanOrEqual(1);
      expect(error).toBeInstanceOf(GitError);
      expect((error as GitError).timedOut).toBe(true);
      expect((error as GitError).message).toMatch(/^git clone timed out after 1500 ms/);
      expect(Date.now() - started).toBeLessThan(8000);
      await new Promise((r) => setTimeout(r, 200));
      expect(processes()).toEqual([]);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  });

  it('fails closed when the repository config cannot be read', async () => {
    const repo = makeRepo('broken-config');
    writeFileSync(join(repo, '.git', 'config'), `${readFileSync(join(repo, '.git', 'config'), 'utf8')}\n[broken\n`);
    const error = await runGit(['status'], { cwd: repo, env }).catch((e: GitError) => e);
    expect(error).toBeInstanceOf(GitError);
    expect((error as GitError).message).toMatch(/^git config \(repository drivers\) exited with 128/);
  });
});
