import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSandbox, type ProcessSandbox } from '@keelson/platform';
import { startHost } from './support/quietHost';

// Bash through the rib host's tool runner, as a prompt node's turn runs it, inside the real
// bubblewrap sandbox. A throwaway tree: <root>/project (the cwd, with .git and .keelson),
// <root>/artifacts (the run's $ARTIFACTS_DIR), <root>/outside (never writable).
const root = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-bash-sandbox-')));
const project = join(root, 'project');
const artifacts = join(root, 'artifacts');
const outside = join(root, 'outside');
for (const dir of [join(project, '.git', 'hooks'), join(project, '.keelson', 'workflows'), artifacts, outside]) mkdirSync(dir, { recursive: true });

/** What the worker's environment might hold: none of it but PATH and HOME may reach a command. */
const hostEnv = {
  PATH: process.env.PATH,
  HOME: process.env.HOME,
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/keelson',
  KEELSON_CREDENTIALS_KEY: 'f'.repeat(64),
  KEELSON_ASSERTION_SECRET: 'assertion-secret-of-at-least-32-characters',
  TEMPORAL_ADDRESS: '127.0.0.1:7233',
  ANTHROPIC_API_KEY: 'sk-ant-secret',
  OPENAI_API_KEY: 'sk-oai-secret',
  DEMO_TOKEN: 'tok-secret',
};

/** Where an escaping write would land if the sandbox let it: the host's home directory. */
const homeEscape = join(homedir(), `keelson-bash-escape-${process.pid}.txt`);

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((_req, res) => res.end('reached the host\n'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(homeEscape, { force: true });
  rmSync(root, { recursive: true, force: true });
});

async function bash(options: { env?: Record<string, string | undefined>; sandbox?: ProcessSandbox } = {}) {
  const { host } = await startHost([], { env: options.env ?? hostEnv, ...(options.sandbox ? { sandbox: options.sandbox } : {}) });
  return (command: string) =>
    host.executeTool({ name: 'Bash', input: { command }, surface: 'workflow', cwd: project, allowedDirectories: [project, artifacts], turnContext: { runId: 'r1', artifactsDir: artifacts } });
}

/** `command` as the shell sees it, hidden from the path policy's reading of the command line (it would deny these words itself). */
const hidden = (command: string) => `echo ${Buffer.from(command).toString('base64')} | base64 -d | bash`;

describe('Bash in the sandbox (real bubblewrap)', () => {
  it('writes inside its cwd and $ARTIFACTS_DIR, and a write outside fails even when the path policy cannot see it', async () => {
    const call = await bash();
    await expect(call('echo in > inside.txt && echo art > "$ARTIFACTS_DIR/art.txt" && echo ok')).resolves.toMatchObject({ status: 'ok', content: 'ok' });
    expect([readFileSync(join(project, 'inside.txt'), 'utf8'), readFileSync(join(artifacts, 'art.txt'), 'utf8')]).toEqual(['in\n', 'art\n']);
    // The home directory is visible (read-only); the tree's other directories under the host's /tmp are not there at all.
    const escape = await call(hidden(`echo pwned > ${homeEscape}`));
    expect(escape).toMatchObject({ status: 'tool-error', isError: true, content: `bash: line 1: ${homeEscape}: Read-only file system\n[exit code 1]` });
    expect(existsSync(homeEscape)).toBe(false);
    await expect(call(hidden('echo pwned > ../outside/escaped.txt'))).resolves.toMatchObject({ status: 'tool-error', content: expect.stringContaining('../outside/escaped.txt: No such file or directory') });
    expect(existsSync(join(outside, 'escaped.txt'))).toBe(false);
    await expect(call(hidden(`echo scratch > ${join(tmpdir(), 'keelson-escaped.txt')}`))).resolves.toMatchObject({ status: 'ok' });
    expect(existsSync(join(tmpdir(), 'keelson-escaped.txt'))).toBe(false);
  });

  it('cannot reach a server listening on the host’s loopback', async () => {
    const call = await bash();
    const r = await call(`curl -sS --max-time 5 ${url}`);
    expect(r).toMatchObject({ status: 'tool-error', content: expect.stringMatching(/Failed to connect to 127\.0\.0\.1 port \d+/) });
    expect(r.content).not.toContain('reached the host');
  });

  it('has none of the worker’s database URL, Temporal address, mesh secrets or API keys in its environment', async () => {
    const call = await bash();
    const { content } = await call('env');
    const names = content.split('\n').map((line) => line.split('=')[0]);
    for (const name of ['DATABASE_URL', 'KEELSON_CREDENTIALS_KEY', 'KEELSON_ASSERTION_SECRET', 'TEMPORAL_ADDRESS', 'ANTHROPIC_API_KEY', 'OPENAI_API_KEY', 'DEMO_TOKEN']) {
      expect([name, names.includes(name)]).toEqual([name, false]);
    }
    expect(content).not.toMatch(/secret|postgres:/);
    expect(names).toEqual(expect.arrayContaining(['PATH', 'HOME', 'PWD', 'ARTIFACTS_DIR', 'TMPDIR']));
  });

  it('finds the cwd’s .git and .keelson read-only', async () => {
    const call = await bash();
    const r = await call('echo evil > .git/hooks/pre-commit; echo evil > .keelson/workflows/evil.yaml; cat .git/hooks/pre-commit 2>/dev/null || echo unwritten');
    expect(r.content).toContain('.git/hooks/pre-commit: Read-only file system');
    expect(r.content).toContain('.keelson/workflows/evil.yaml: Read-only file system');
    expect(r.content).toContain('unwritten');
    expect(existsSync(join(project, '.git', 'hooks', 'pre-commit')) || existsSync(join(project, '.keelson', 'workflows', 'evil.yaml'))).toBe(false);
  });

  it('refuses to run without a usable bwrap, naming the fix, and runs unsandboxed only when KEELSON_SANDBOX is off', async () => {
    const missing = join(root, 'no-such-bwrap');
    const refused = await (await bash({ sandbox: createSandbox({ bwrap: missing }) }))('echo should-not-run > ran.txt');
    expect(refused).toMatchObject({
      status: 'tool-error',
      isError: true,
      content: `Bash refused: KEELSON_SANDBOX=required and the sandbox is unavailable (${missing} not found); install bubblewrap (Debian/Ubuntu: apt-get install -y bubblewrap) or set KEELSON_SANDBOX=off to run without confinement`,
    });
    expect(existsSync(join(project, 'ran.txt'))).toBe(false);

    const warnings: string[] = [];
    const off = await bash({ sandbox: createSandbox({ mode: 'off', bwrap: missing, warn: (m) => warnings.push(m) }) });
    await expect(off(`curl -sS --max-time 5 ${url}`)).resolves.toMatchObject({ status: 'ok', content: 'reached the host' });
    expect(warnings).toHaveLength(1);
    // Off gives up the sandbox, not the environment filter.
    expect((await off('env')).content).not.toContain('DATABASE_URL');
  });

  it('takes KEELSON_SANDBOX from the host’s environment', async () => {
    const off = await bash({ env: { ...hostEnv, KEELSON_SANDBOX: 'off' } });
    await expect(off(`curl -sS --max-time 5 ${url}`)).resolves.toMatchObject({ status: 'ok', content: 'reached the host' });
    const required = await bash({ env: { ...hostEnv, KEELSON_SANDBOX: 'required' } });
    await expect(required(`curl -sS --max-time 5 ${url}`)).resolves.toMatchObject({ status: 'tool-error' });
  });
});
