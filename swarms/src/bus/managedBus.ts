import { execFile, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { isAlive, ownsProcess, signalGroup } from '@keelson/platform';
import { MeshError } from '@keelson/schema';
import { ClickClackClient } from './clickclack';

const run = promisify(execFile);

export interface ManagedBusOptions {
  /** The `clickclack` binary (CLICKCLACK_BIN, else from PATH). */
  binary: string;
  /** `<KEELSON_HOME>/rib-swarm/clickclack`: `data/`, `server.log`, `state.json`. */
  dir: string;
  /** The loopback port it listens on (CLICKCLACK_PORT, default 18080). */
  port: number;
  /** The environment the child inherits, minus every `CLICKCLACK_*` variable. @default process.env */
  env?: Record<string, string | undefined>;
  /** How long a start waits for `/readyz`. @default 30000 */
  readyTimeoutMs?: number;
  /** SIGINT, then SIGKILL after this long. @default 6000 */
  stopGraceMs?: number;
}

/** What `state.json` records of the server this mesh started. */
export interface BusProcessRecord {
  pid: number;
  url: string;
  startedAt: string;
  binary: string;
  args: string[];
}

export interface ManagedBusStatus {
  url: string;
  dataDir: string;
  binary: string;
  /** A server this mesh owns is alive (by its command line). */
  running: boolean;
  /** It answers `/readyz`. */
  ready: boolean;
  pid?: number;
  /** This process found it running rather than starting it. */
  adopted: boolean;
}

/** The owner the mesh bootstraps on a managed server (a human user only the mesh can sign in as). */
export const MANAGED_OWNER = { email: 'owner@keelson-mesh.local', name: 'Keelson Mesh' } as const;

/** The workspace the managed owner's swarms live in, created on first sign-in when it has none. */
export const MANAGED_WORKSPACE = { name: 'Keelson Mesh', slug: 'keelson-mesh' } as const;

/** What `owner.json` records of the owner bootstrapped on this data directory. */
export interface BusOwnerRecord {
  email: string;
  userId: string;
  bootstrappedAt: string;
}

/**
 * A ClickClack server the mesh runs itself (seed 001 "The rib may run ClickClack"): `clickclack serve
 * --addr 127.0.0.1:<port> --data <dir>/data` (plus `--access-log errors` only when `serve -h` lists
 * it) in its own process group, output to `server.log`, no `CLICKCLACK_*` variables. Never with
 * `--dev-bootstrap`, which makes every local process its owner without a credential: before the first
 * start the owner is created with ClickClack's own `admin bootstrap` (recorded in `owner.json`), and
 * an owner session is signed in through `admin magic-link create` (ClickClack's tool, on the data
 * directory the mesh owns) and `POST /api/auth/magic/consume`, so only a process that can read the
 * bus's data directory can become its owner. Ownership is proved by the command line carrying the data directory, never by the
 * recorded pid alone; a server a crashed process left running is adopted. Stop is SIGINT to the
 * group, then SIGKILL. Starts, stops and resets are serialized in this process and, through a lock
 * file, across processes sharing the Keelson home.
 */
export class ManagedBus {
  readonly dir: string;
  readonly dataDir: string;
  readonly logFile: string;
  readonly stateFile: string;
  readonly ownerFile: string;
  readonly url: string;
  private queue: Promise<unknown> = Promise.resolve();
  private spawnedPid: number | undefined;
  private versionText: Promise<string | undefined> | undefined;

  constructor(private readonly opts: ManagedBusOptions) {
    this.dir = opts.dir;
    this.dataDir = join(opts.dir, 'data');
    this.logFile = join(opts.dir, 'server.log');
    this.stateFile = join(opts.dir, 'state.json');
    this.ownerFile = join(opts.dir, 'owner.json');
    this.url = `http://127.0.0.1:${opts.port}`;
  }

  get binary(): string {
    return this.opts.binary;
  }

  /** An anonymous client of the server (readiness; sign-in). */
  client(): ClickClackClient {
    return new ClickClackClient({ url: this.url });
  }

  private record(): BusProcessRecord | undefined {
    try {
      return JSON.parse(readFileSync(this.stateFile, 'utf8')) as BusProcessRecord;
    } catch {
      return undefined;
    }
  }

  /** The owned server's pid, if one is alive: the recorded pid whose command line carries our data directory. */
  ownedPid(): number | undefined {
    const rec = this.record();
    return rec && ownsProcess(rec.pid, [['--data', this.dataDir]]) ? rec.pid : undefined;
  }

  /** The server's state; never starts anything. */
  async status(): Promise<ManagedBusStatus> {
    const pid = this.ownedPid();
    const ready = pid !== undefined && (await this.client().ready());
    return {
      url: this.url,
      dataDir: this.dataDir,
      binary: this.opts.binary,
      running: pid !== undefined,
      ready,
      ...(pid !== undefined ? { pid } : {}),
      adopted: pid !== undefined && pid !== this.spawnedPid,
    };
  }

  /** `clickclack version`, first line (cached). */
  version(): Promise<string | undefined> {
    this.versionText ??= run(this.opts.binary, ['version'], { timeout: 5000 }).then(
      (r) => (r.stdout || r.stderr).split('\n')[0]?.trim() || undefined,
      () => undefined,
    );
    return this.versionText;
  }

  /** Runs `fn` alone: after earlier calls of this process, and holding the lock file. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(async () => {
      const release = await this.lock();
      try {
        return await fn();
      } finally {
        release();
      }
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async lock(): Promise<() => void> {
    mkdirSync(this.dir, { recursive: true });
    const path = join(this.dir, 'lock');
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        const fd = openSync(path, 'wx');
        writeFileSync(fd, String(process.pid));
        closeSync(fd);
        return () => {
          try {
            unlinkSync(path);
          } catch {
            // already gone
          }
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = Number(readFileSync(path, 'utf8').trim() || '0');
      if (!holder || !isAlive(holder)) {
        // A holder that died (or a lock torn mid-write) releases nothing: clear it and retry.
        try {
          unlinkSync(path);
        } catch {
          // raced with another process clearing it
        }
        continue;
      }
      if (Date.now() > deadline) throw new MeshError('SERVICE_UNAVAILABLE', `the managed ClickClack is locked by process ${holder} (${path})`);
      await sleep(100);
    }
  }

  /**
   * The server up: adopted when an owned one answers, restarted when an owned one does not, else
   * started. Refuses (SERVICE_UNAVAILABLE) when something this mesh does not own answers on the
   * port, or the server is not ready in time.
   */
  ensure(): Promise<ManagedBusStatus> {
    return this.exclusive(() => this.ensureLocked());
  }

  private async ensureLocked(): Promise<ManagedBusStatus> {
    const pid = this.ownedPid();
    if (pid !== undefined) {
      if (await this.waitReady(Math.min(5000, this.opts.readyTimeoutMs ?? 30_000), pid)) return this.status();
      // Ours, alive, and not answering: the one that most needs killing.
      await this.stopPid(pid);
    }
    this.clearRecord();
    if (await this.client().answers()) {
      throw new MeshError('SERVICE_UNAVAILABLE', `port ${this.opts.port} is taken by a server this mesh does not own (${this.url}); set CLICKCLACK_PORT to another port, or CLICKCLACK_URL to use that server`);
    }
    await this.spawn();
    return this.status();
  }

  private async serveArgs(): Promise<string[]> {
    const args = ['serve', '--addr', `127.0.0.1:${this.opts.port}`, '--data', this.dataDir];
    if (/(^|\s)--?access-log\b/m.test(await this.serveHelp())) args.push('--access-log', 'errors');
    return args;
  }

  /** `clickclack serve -h` (flags differ between releases: probe before passing optional ones). */
  async serveHelp(): Promise<string> {
    try {
      const r = await run(this.opts.binary, ['serve', '-h'], { timeout: 5000, env: childEnv(this.opts.env ?? process.env) });
      return `${r.stdout}\n${r.stderr}`;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      return `${e.stdout ?? ''}\n${e.stderr ?? ''}`;
    }
  }

  private owner(): BusOwnerRecord | undefined {
    try {
      return JSON.parse(readFileSync(this.ownerFile, 'utf8')) as BusOwnerRecord;
    } catch {
      return undefined;
    }
  }

  /** `clickclack admin …` on our data directory; its stdout, or SERVICE_UNAVAILABLE with its stderr. */
  private async admin(args: string[]): Promise<string> {
    try {
      const r = await run(this.opts.binary, ['admin', ...args], { timeout: 20_000, env: childEnv(this.opts.env ?? process.env) });
      return r.stdout;
    } catch (err) {
      const e = err as { stderr?: string; message: string };
      throw new MeshError('SERVICE_UNAVAILABLE', `clickclack admin ${args[0]} failed: ${(e.stderr ?? '').trim() || e.message}`);
    }
  }

  /** The owner, created once per data directory with `admin bootstrap` and recorded in `owner.json`. */
  private async ensureOwner(): Promise<BusOwnerRecord> {
    const known = this.owner();
    if (known) return known;
    mkdirSync(this.dataDir, { recursive: true });
    const out = await this.admin(['bootstrap', '-data', this.dataDir, '-email', MANAGED_OWNER.email, '-name', MANAGED_OWNER.name]);
    const userId = /\busr_[A-Za-z0-9]+/.exec(out)?.[0];
    if (!userId) throw new MeshError('SERVICE_UNAVAILABLE', `clickclack admin bootstrap printed no user id: ${out.trim().slice(0, 200)}`);
    const rec: BusOwnerRecord = { email: MANAGED_OWNER.email, userId, bootstrappedAt: new Date().toISOString() };
    writeFileSync(this.ownerFile, `${JSON.stringify(rec, null, 2)}\n`, { mode: 0o600 });
    return rec;
  }

  /**
   * A fresh owner session (`sst_…`): a magic link from `admin magic-link create` on our data
   * directory, consumed over the API. Held in memory by the caller, never logged.
   */
  async ownerSession(): Promise<string> {
    const owner = await this.ensureOwner();
    const out = await this.admin(['magic-link', 'create', '-data', this.dataDir, '-email', owner.email]);
    const link = /\bmgt_[A-Za-z0-9_-]+/.exec(out)?.[0];
    if (!link) throw new MeshError('SERVICE_UNAVAILABLE', 'clickclack admin magic-link create printed no mgt_ token');
    const session = await this.client().consumeMagicLink(link);
    const signedIn = this.client().withToken(session);
    // `admin bootstrap` makes a user; whether it also makes a workspace differs between releases.
    if ((await signedIn.listWorkspaces()).length === 0) await signedIn.createWorkspace(MANAGED_WORKSPACE);
    return session;
  }

  private async spawn(): Promise<void> {
    mkdirSync(this.dataDir, { recursive: true });
    await this.ensureOwner();
    const args = await this.serveArgs();
    const log = openSync(this.logFile, 'a');
    let exited: string | undefined;
    try {
      const child = spawn(this.opts.binary, args, { cwd: this.dir, detached: true, stdio: ['ignore', log, log], env: childEnv(this.opts.env ?? process.env) });
      child.once('exit', (code, signal) => (exited = `exited with ${signal ?? code}`));
      child.once('error', (err) => (exited = `could not start: ${err.message}`));
      child.unref();
      if (child.pid === undefined) {
        await sleep(50);
        throw new MeshError('SERVICE_UNAVAILABLE', `clickclack ${exited ?? 'could not start'} (${this.opts.binary})`);
      }
      this.spawnedPid = child.pid;
      const rec: BusProcessRecord = { pid: child.pid, url: this.url, startedAt: new Date().toISOString(), binary: this.opts.binary, args };
      writeFileSync(this.stateFile, `${JSON.stringify(rec, null, 2)}\n`);
    } finally {
      closeSync(log);
    }
    const readyMs = this.opts.readyTimeoutMs ?? 30_000;
    if (!(await this.waitReady(readyMs, this.spawnedPid, () => exited))) {
      const tail = this.logTail();
      if (!exited) await this.stopPid(this.spawnedPid);
      this.clearRecord();
      throw new MeshError('SERVICE_UNAVAILABLE', `clickclack ${exited ?? `was not ready within ${readyMs} ms`} (${this.url}); server.log ends:\n${tail}`);
    }
  }

  private async waitReady(ms: number, pid: number, exited?: () => string | undefined): Promise<boolean> {
    const deadline = Date.now() + ms;
    const client = this.client();
    for (;;) {
      if (await client.ready()) return true;
      if (exited?.() || !isAlive(pid) || Date.now() > deadline) return false;
      await sleep(100);
    }
  }

  /** The last lines of `server.log`. */
  logTail(lines = 20): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines - 1).join('\n');
    } catch {
      return '';
    }
  }

  /** The signal that ended the last server this instance stopped: SIGINT when it drained within the grace. */
  lastStopSignal: 'SIGINT' | 'SIGKILL' | undefined;

  private clearRecord(): void {
    rmSync(this.stateFile, { force: true });
  }

  private async stopPid(pid: number): Promise<void> {
    signalGroup(pid, 'SIGINT');
    this.lastStopSignal = 'SIGINT';
    if (await waitGone(pid, this.opts.stopGraceMs ?? 6000)) return;
    signalGroup(pid, 'SIGKILL');
    this.lastStopSignal = 'SIGKILL';
    await waitGone(pid, 2000);
  }

  /** Stops the owned server (SIGINT to its group, SIGKILL after the grace). @returns whether one was running */
  stop(): Promise<boolean> {
    return this.exclusive(async () => {
      const pid = this.ownedPid();
      if (pid !== undefined) await this.stopPid(pid);
      this.clearRecord();
      return pid !== undefined;
    });
  }

  /** Stop, delete the data directory (every identity, message and event), start fresh. */
  reset(): Promise<ManagedBusStatus> {
    return this.exclusive(async () => {
      const pid = this.ownedPid();
      if (pid !== undefined) await this.stopPid(pid);
      this.clearRecord();
      rmSync(this.dataDir, { recursive: true, force: true });
      rmSync(this.ownerFile, { force: true });
      return this.ensureLocked();
    });
  }
}

/** The environment a spawned server gets: the caller's, minus every `CLICKCLACK_*` variable. */
export function childEnv(env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && !key.startsWith('CLICKCLACK_')) out[key] = value;
  return out;
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (isAlive(pid)) {
    if (Date.now() > deadline) return false;
    await sleep(50);
  }
  return true;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
