import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSandbox } from '@keelson/platform';
import { parseEnv } from '@keelson/schema';
import { createDriverRegistry } from '../registry';
import { harnessSettings } from '../settings';

// A turn's command line through the mesh's sandbox (real bubblewrap): what the CLI may write and reach.
describe('CliDriver.confine', () => {
  let dir: string;
  let cwd: string;
  beforeAll(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'keelson-cli-sandbox-')));
    cwd = join(dir, 'project');
    await mkdir(join(cwd, '.git'), { recursive: true });
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const settings = (extra: Record<string, string> = {}) => harnessSettings(parseEnv({ KEELSON_HOME: join(dir, 'home'), ...extra }), { PATH: process.env.PATH });

  it('lets the CLI write its cwd and its own folder, not the rest of the keelson home nor .git; the network stays on', async () => {
    const drivers = createDriverRegistry(settings());
    const pi = drivers.pi;
    await pi.prepare();
    const script = `echo ok > "$PWD/turn.txt" && echo ok > "${pi.root}/state.txt" && ls "${join(dir, 'home')}" && { echo x > .git/x 2>/dev/null || echo ".git read-only"; } && echo "tmp=$TMPDIR"`;
    const cmd = await pi.confine({ argv: ['bash', '-c', script], env: { PATH: process.env.PATH! } }, cwd);
    // bwrap, with the seccomp filter (no ptrace) handed to it on a descriptor, and the host network.
    expect(cmd.argv).toEqual(expect.arrayContaining([expect.stringMatching(/\/bwrap$/), '--seccomp']));
    expect(cmd.argv).not.toContain('--unshare-net');
    const out = execFileSync(cmd.argv[0]!, cmd.argv.slice(1), { env: cmd.env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    // The keelson home holds only this CLI's folder (its parents), the rest is hidden.
    expect(out).toBe('harness\n.git read-only\ntmp=/tmp\n');
  });

  it('refuses a turn when the sandbox is required and bubblewrap is missing; runs the command as given when off', async () => {
    const missing = { ...settings(), sandbox: createSandbox({ bwrap: join(dir, 'no-such-bwrap') }) };
    await expect(createDriverRegistry(missing).codex.confine({ argv: ['/bin/codex', 'exec'], env: {} }, cwd)).rejects.toMatchObject({
      code: 'CAPABILITY_UNSUPPORTED',
      message: expect.stringMatching(/^a codex turn refused: KEELSON_SANDBOX=required and the sandbox is unavailable .*set KEELSON_SANDBOX=off/),
    });
    const off = createDriverRegistry(settings({ KEELSON_SANDBOX: 'off' }));
    await expect(off.codex.confine({ argv: ['/bin/codex', 'exec'], env: { A: '1' } }, cwd)).resolves.toEqual({ argv: ['/bin/codex', 'exec'], env: { A: '1' } });
  });
});
