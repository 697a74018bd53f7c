import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickClackClient } from '../src/bus/clickclack';
import { MANAGED_OWNER, ManagedBus } from '../src/bus/managedBus';
import { isAlive } from '@keelson/platform';
import { clickclackBinary, freePort, STANDIN_BIN } from './support/binary';

const groupOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2]);
const environOf = (pid: number) => readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
const argvOf = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

describe('ManagedBus: a ClickClack server the mesh runs itself', () => {
  let dir: string;
  const buses: ManagedBus[] = [];
  const bus = async (opts: Partial<ConstructorParameters<typeof ManagedBus>[0]> = {}) => {
    const b = new ManagedBus({ binary: clickclackBinary(), dir: join(dir, 'clickclack'), port: await freePort(), readyTimeoutMs: 20_000, ...opts });
    buses.push(b);
    return b;
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'keelson-managed-bus-'));
  });
  afterEach(async () => {
    for (const b of buses.splice(0)) await b.stop().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts `serve` on loopback without --dev-bootstrap in its own process group, without CLICKCLACK_* variables, and records it', async () => {
    const b = await bus({ env: { ...process.env, CLICKCLACK_DB: 'postgres://elsewhere', CLICKCLACK_DATA: '/tmp/elsewhere' } });
    const status = await b.ensure();
    expect(status).toMatchObject({ running: true, ready: true, adopted: false, url: b.url, dataDir: b.dataDir });
    const pid = status.pid!;
    expect(groupOf(pid)).toBe(pid);
    expect(groupOf(pid)).not.toBe(groupOf(process.pid));
    const argv = argvOf(pid);
    expect(argv.slice(argv.indexOf('serve'))).toEqual(expect.arrayContaining(['serve', '--addr', b.url.replace('http://', ''), '--data', b.dataDir]));
    expect(argv.some((a) => a.includes('dev-bootstrap'))).toBe(false);
    expect(environOf(pid).filter((v) => v.startsWith('CLICKCLACK_'))).toEqual([]);
    expect(JSON.parse(readFileSync(b.stateFile, 'utf8'))).toMatchObject({ pid, url: b.url, binary: clickclackBinary() });
    // The owner signs in with a magic link from ClickClack's own admin command, then over the API.
    const owner = new ClickClackClient({ url: b.url, token: await b.ownerSession() });
    expect((await owner.me()).kind).toBe('human');
    expect((await owner.listWorkspaces()).length).toBeGreaterThan(0);
  });

  it('trusts no local process: without a credential the managed server answers 401, and loopback magic links are off', async () => {
    const b = await bus();
    await b.ensure();
    const anonymous = b.client();
    await expect(anonymous.me()).rejects.toMatchObject({ status: 401 });
    await expect(anonymous.magicSession(MANAGED_OWNER.email)).rejects.toMatchObject({ status: 501 });
    // The owner was bootstrapped once, recorded privately; a second start reuses it.
    const owner = JSON.parse(readFileSync(b.ownerFile, 'utf8')) as { userId: string; email: string };
    expect(owner).toMatchObject({ email: MANAGED_OWNER.email, userId: expect.stringMatching(/^usr_/) });
    expect(statSync(b.ownerFile).mode & 0o077).toBe(0);
    const first = await new ClickClackClient({ url: b.url, token: await b.ownerSession() }).me();
    await b.stop();
    await b.ensure();
    const second = await new ClickClackClient({ url: b.url, token: await b.ownerSession() }).me();
    expect([first.id, second.id]).toEqual([owner.userId, owner.userId]);
  });

  it('adopts a server a previous process left running (ownership by its command line), and starts no second one', async () => {
    const first = await bus();
    const started = await first.ensure();
    const port = Number(new URL(first.url).port);
    const second = new ManagedBus({ binary: clickclackBinary(), dir: first.dir, port });
    buses.push(second);
    expect(await second.status()).toMatchObject({ running: true, adopted: true, pid: started.pid });
    expect(await second.ensure()).toMatchObject({ running: true, ready: true, adopted: true, pid: started.pid });
  });

  it('never trusts a recorded pid alone: a live process without our data directory is not ours', async () => {
    const b = await bus();
    await b.ensure();
    const real = JSON.parse(readFileSync(b.stateFile, 'utf8')) as { pid: number };
    await b.stop();
    writeFileSync(b.stateFile, JSON.stringify({ ...real, pid: process.pid }));
    expect(b.ownedPid()).toBeUndefined();
    expect((await b.status()).running).toBe(false);
    const restarted = await b.ensure();
    expect(restarted.pid).not.toBe(process.pid);
    expect(isAlive(process.pid)).toBe(true);
  });

  it('refuses a port another server answers on', async () => {
    const port = await freePort();
    const foreign = createServer((_req, res) => res.end('{}')).listen(port, '127.0.0.1');
    try {
      const b = await bus({ port });
      await expect(b.ensure()).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining(`port ${port} is taken by a server this mesh does not own`) });
    } finally {
      foreign.close();
    }
  });

  it('stops with SIGINT (it drains), then forgets it', async () => {
    const b = await bus();
    const { pid } = await b.ensure();
    expect(await b.stop()).toBe(true);
    expect(isAlive(pid!)).toBe(false);
    expect(existsSync(b.stateFile)).toBe(false);
    // It drained on SIGINT within the grace (the real server logs nothing when it does; the stand-in does).
    expect(b.lastStopSignal).toBe('SIGINT');
    expect(await b.stop()).toBe(false);
  });

  it('resets: stop, delete the data directory, start fresh', async () => {
    const b = await bus();
    await b.ensure();
    const before = new ClickClackClient({ url: b.url, token: await b.ownerSession() });
    const captain = await before.me();
    await b.reset();
    const after = new ClickClackClient({ url: b.url, token: await b.ownerSession() });
    expect((await after.me()).id).not.toBe(captain.id);
    await expect(before.me()).rejects.toMatchObject({ status: 401 });
  });

  it('kills and replaces an owned server that stopped answering', async () => {
    const b = await bus({ stopGraceMs: 1000, readyTimeoutMs: 3000 });
    const { pid } = await b.ensure();
    process.kill(pid!, 'SIGSTOP');
    const replaced = await b.ensure();
    expect(replaced.pid).not.toBe(pid);
    expect(replaced.ready).toBe(true);
    expect(isAlive(pid!)).toBe(false);
  }, 30_000);

  describe('with the stand-in emulating releases', () => {
    it('passes --access-log errors only when `serve -h` lists it (0.5.0 and later)', async () => {
      const current = await bus({ binary: STANDIN_BIN });
      expect(argvOf((await current.ensure()).pid!)).toEqual(expect.arrayContaining(['--access-log', 'errors']));
      const old = await bus({ binary: STANDIN_BIN, dir: join(dir, 'old'), env: { ...process.env, KEELSON_CLICKCLACK_STANDIN_VERSION: '0.4.0' } });
      const status = await old.ensure();
      expect(status.ready).toBe(true);
      expect(argvOf(status.pid!)).not.toContain('--access-log');
    });
  });

  it('escalates to SIGKILL when SIGINT does not stop it', async () => {
    const stubborn = join(dir, 'stubborn-clickclack');
    writeFileSync(
      stubborn,
      [
        '#!/usr/bin/env node',
        "if (process.argv.includes('-h')) { console.log('Usage of serve:\\n  --addr string\\n  --data string'); process.exit(0); }",
        "if (process.argv[2] === 'admin') { console.log('usr_stubborn'); process.exit(0); }",
        "const addr = process.argv[process.argv.indexOf('--addr') + 1];",
        "process.on('SIGINT', () => console.log('ignoring SIGINT'));",
        "require('node:http').createServer((q, s) => s.end('{\"status\":\"ready\"}')).listen(Number(addr.split(':')[1]), '127.0.0.1');",
      ].join('\n'),
    );
    chmodSync(stubborn, 0o755);
    const b = await bus({ binary: stubborn, stopGraceMs: 500 });
    const { pid } = await b.ensure();
    expect(argvOf(pid!)).not.toContain('--access-log');
    const stoppedAt = Date.now();
    expect(await b.stop()).toBe(true);
    expect(isAlive(pid!)).toBe(false);
    expect(Date.now() - stoppedAt).toBeGreaterThanOrEqual(450);
    expect(readFileSync(b.logFile, 'utf8')).toContain('ignoring SIGINT');
    expect(b.lastStopSignal).toBe('SIGKILL');
  });
});
