import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createExec } from '../src/exec/createExec';

// Real child processes: the exec every rib gets from ctx.getExec().

const exec = createExec({ killGraceMs: 200 });

describe('getExec', () => {
  it('runs a command without a shell and returns its stdout', async () => {
    await expect(exec.runText('printf', ['%s|%s', 'a b', '$HOME'])).resolves.toEqual({ ok: true, data: 'a b|$HOME', exitCode: 0 });
  });

  it('parses JSON output, and reports output that is not JSON', async () => {
    await expect(exec.runJSON<{ n: number }>('node', ['-e', 'console.log(JSON.stringify({ n: 1 }))'])).resolves.toEqual({ ok: true, data: { n: 1 }, exitCode: 0 });
    await expect(exec.runJSON('echo', ['not json'])).resolves.toMatchObject({ ok: false, error: expect.stringMatching(/stdout is not JSON/), code: 0 });
  });

  it('reports a non-zero exit with stderr, unless told to accept it', async () => {
    const script = 'process.stderr.write("bad ref\\n"); process.stdout.write("partial"); process.exit(3)';
    await expect(exec.runText('node', ['-e', script])).resolves.toEqual({ ok: false, error: 'bad ref', code: 3, stderr: 'bad ref\n' });
    await expect(exec.runText('node', ['-e', script], { acceptNonZeroExit: true })).resolves.toEqual({ ok: true, data: 'partial', exitCode: 3 });
  });

  it('reports a missing command instead of throwing', async () => {
    await expect(exec.runText('keelson-no-such-command', [])).resolves.toMatchObject({ ok: false, error: 'command not found: keelson-no-such-command', code: null });
  });

  it('passes cwd, env and stdin', async () => {
    const script = 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(process.cwd(), process.env.RIB_FLAG, s))';
    await expect(exec.runText('node', ['-e', script], { cwd: '/tmp', env: { RIB_FLAG: 'on' }, input: 'piped' })).resolves.toMatchObject({ ok: true, data: '/tmp on piped\n' });
  });

  it('kills a process (and its children) that outlives its timeout', async () => {
    const started = Date.now();
    const result = await exec.runText('sh', ['-c', 'sleep 30 & sleep 30'], { timeoutMs: 100 });
    expect(result).toMatchObject({ ok: false, error: 'timed out after 100ms' });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('kills a process when the caller aborts', async () => {
    const controller = new AbortController();
    const run = exec.runText('sleep', ['30'], { signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(run).resolves.toMatchObject({ ok: false, error: 'aborted' });
  });

  it('kills every running process when the host shuts down', async () => {
    const lifetime = new AbortController();
    const hostExec = createExec({ signal: lifetime.signal, killGraceMs: 200 });
    const run = hostExec.runText('sleep', ['30']);
    setTimeout(() => lifetime.abort(), 50);
    await expect(run).resolves.toMatchObject({ ok: false, error: 'aborted' });
    await expect(hostExec.runText('echo', ['late'])).resolves.toMatchObject({ ok: false, error: 'aborted' });
  });
});

describe('getExec: git runs hardened, whichever rib runs it', () => {
  let tmp: string;
  let env: Record<string, string>;
  let repo: string;
  const plainGit = (...args: string[]) => execFileSync('git', args, { cwd: repo, env, encoding: 'utf8' }).trim();

  beforeAll(() => {
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-exec-git-')));
    writeFileSync(join(tmp, 'gitconfig'), '[user]\n\tname = T\n\temail = t@keelson.invalid\n[init]\n\tdefaultBranch = main\n');
    env = { GIT_CONFIG_GLOBAL: join(tmp, 'gitconfig'), GIT_CONFIG_NOSYSTEM: '1' };
    repo = join(tmp, 'repo');
    mkdirSync(repo);
    plainGit('init', '--quiet');
    writeFileSync(join(repo, 'a.txt'), 'a\n');
    plainGit('add', '.');
    plainGit('commit', '--quiet', '-m', 'one');
  });
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it("does not run a repository's core.fsmonitor on `git -C <root> status`, as the projects board calls it", async () => {
    const marker = join(tmp, 'fsmonitor-ran');
    plainGit('config', 'core.fsmonitor', `touch '${marker}'; false`);
    const result = await exec.runText('git', ['-C', repo, 'status', '--porcelain=v2', '--branch', '-z'], { env });
    expect(result).toMatchObject({ ok: true, data: expect.stringContaining('# branch.head main') });
    expect(existsSync(marker)).toBe(false);
    // The same command through a plain spawn runs it: the hardening is what stopped it.
    await exec.runText('sh', ['-c', `git -C '${repo}' status >/dev/null`], { env });
    expect(existsSync(marker)).toBe(true);
  });

  it('answers a repository whose config git cannot read with a failed result, not a throw', async () => {
    const broken = join(tmp, 'broken');
    mkdirSync(broken);
    execFileSync('git', ['init', '--quiet'], { cwd: broken, env });
    writeFileSync(join(broken, '.git', 'config'), '[broken\n');
    await expect(exec.runText('git', ['status'], { cwd: broken, env })).resolves.toMatchObject({ ok: false, code: 128 });
  });
});
