import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { findOrphanGroups, findOwnedProcesses, isAlive, listProcesses } from '@keelson/platform';
import { freePort } from '@keelson/service';
import { findTemporalCli } from '@keelson/temporal';

const root = join(__dirname, '..', '..');

/** The fixed ports and folders of one `npm start` installation, kept across its restarts. */
export interface StartInstallation {
  home: string;
  env: NodeJS.ProcessEnv;
  gatewayUrl: string;
  temporalAddress: string;
  /** The dev server's state file (its command line carries it). */
  devDb: string;
}

/** Ports for every service of a mesh (so a restart finds them where the crashed one had them). */
export async function startInstallation(dir: string, databaseUrl: string, extraEnv: NodeJS.ProcessEnv = {}): Promise<StartInstallation> {
  const cli = await findTemporalCli();
  if (!cli) throw new Error('the temporal CLI is missing; globalSetup says how to build it');
  const names = ['GATEWAY', 'PROJECTS', 'RIBS', 'RUNS', 'SESSIONS', 'MEMORY', 'IDENTITY', 'SWARMS', 'TEMPORAL', 'TEMPORAL_UI'];
  const ports: Record<string, string> = {};
  for (const name of names) ports[`KEELSON_${name}_PORT`] = String(await freePort());
  const home = join(dir, 'home');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${dirname(cli)}:${process.env.PATH ?? ''}`,
    DATABASE_URL: databaseUrl,
    KEELSON_HOME: home,
    KEELSON_WORKSPACE: join(dir, 'workspace'),
    GIT_CONFIG_GLOBAL: join(dir, 'gitconfig'),
    GIT_CONFIG_NOSYSTEM: '1',
    TEMPORAL_ADDRESS: undefined,
    TEMPORAL_TASK_QUEUE: undefined,
    KEELSON_TEST_TEMPORAL_ADDRESS: undefined,
    KEELSON_MEMORY_COMPACTION_INTERVAL_MS: '0',
    KEELSON_LOG_LEVEL: 'warn',
    ...ports,
    ...extraEnv,
  };
  return {
    home,
    env,
    gatewayUrl: `http://127.0.0.1:${ports.KEELSON_GATEWAY_PORT}/graphql`,
    temporalAddress: `127.0.0.1:${ports.KEELSON_TEMPORAL_PORT}`,
    devDb: join(home, 'temporal', 'dev.db'),
  };
}

/** `npm start` as a terminal runs it: `apps/mesh/main.ts` leading a process group of its own. */
export interface StartProcess {
  pid: number;
  output(): string;
  /** What the machine does in an OOM kill or a crashed terminal: SIGKILL to the whole group. */
  killGroup(): Promise<void>;
  /** Ctrl-C (SIGINT to the group) and wait for the exit. */
  interrupt(): Promise<void>;
  /** The admin token the mesh wrote to its home. */
  token(): Promise<string>;
}

/** `npm start`'s own Node flags (`--max-semi-space-size=64`), from package.json's `start` script. */
export function startScriptNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  const argv = pkg.scripts.start.split(/\s+/);
  return argv.slice(1, argv.indexOf('-r')).filter((a) => a.startsWith('--'));
}

/**
 * Starts `apps/mesh/main.ts` leading a process group of its own; `nodeFlags` (`startScriptNodeFlags()`
 * for exactly the README's `npm start`) go before it. @default no flags
 */
export async function startMeshProcess(installation: StartInstallation, readyTimeoutMs = 120_000, nodeFlags: string[] = []): Promise<StartProcess> {
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags, '-r', './scripts/register.js', 'apps/mesh/main.ts'], {
    cwd: root,
    env: installation.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pid = child.pid!;
  const deadline = Date.now() + readyTimeoutMs;
  while (!output.includes('Press Ctrl-C to stop.')) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`npm start exited before it came up:\n${output}`);
    if (Date.now() > deadline) {
      process.kill(-pid, 'SIGKILL');
      throw new Error(`npm start did not come up within ${readyTimeoutMs} ms:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid,
    output: () => output,
    async killGroup() {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
      // Wait until no member of the group is left (the kernel reaps them asynchronously).
      const end = Date.now() + 10_000;
      while ((await listProcesses()).some((p) => p.pgid === pid) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    },
    async interrupt() {
      try {
        process.kill(-pid, 'SIGINT');
      } catch {
        // already gone
      }
      await exited;
    },
    token: async () => (await readFile(join(installation.home, 'token'), 'utf8')).trim(),
  };
}

/** Every process this installation still owns after a stop: its dev server, orphaned groups. */
export async function leftovers(installation: StartInstallation): Promise<string[]> {
  const server = await findOwnedProcesses([['--db-filename', installation.devDb]]);
  const orphans = await findOrphanGroups(installation.home);
  return [...server.filter((p) => isAlive(p.pid)).map((p) => `dev server ${p.pid}`), ...orphans.map((o) => `${o.kind} group ${o.pgid}`)];
}
