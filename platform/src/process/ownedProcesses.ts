import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A running process as the OS reports it. */
export interface ProcessInfo {
  pid: number;
  /** Its process group (the one to signal for the process and everything it started). */
  pgid: number;
  /** Its argv. */
  argv: string[];
}

async function fromProc(): Promise<ProcessInfo[] | undefined> {
  let names: string[];
  try {
    names = await readdir('/proc');
  } catch {
    return undefined;
  }
  const found: ProcessInfo[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const [cmdline, stat] = await Promise.all([readFile(`/proc/${name}/cmdline`, 'utf8'), readFile(`/proc/${name}/stat`, 'utf8')]);
      const argv = cmdline.split('\u0000').filter((a) => a.length > 0);
      if (argv.length === 0) continue;
      // stat: "pid (comm) state ppid pgrp …" — comm may hold spaces and parentheses: split after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      found.push({ pid: Number(name), pgid: Number(fields[2]), argv });
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found;
}

async function fromPs(): Promise<ProcessInfo[]> {
  const { stdout } = await run('ps', ['-eo', 'pid=,pgid=,args='], { maxBuffer: 16 * 1024 * 1024 });
  return stdout.split('\n').flatMap((line) => {
    const m = /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line);
    return m ? [{ pid: Number(m[1]), pgid: Number(m[2]), argv: m[3]!.split(/\s+/) }] : [];
  });
}

/** Every process of this machine with its group and argv (`/proc`, else `ps`). */
export async function listProcesses(): Promise<ProcessInfo[]> {
  return (await fromProc()) ?? (await fromPs());
}

/**
 * Whether `argv` carries `run` as consecutive arguments. A two-part run naming a flag and its value
 * (`['--data', dir]`) is also found as `--data=<dir>`, and in the single-dash form Go's flag
 * package accepts (`-data <dir>`, `-data=<dir>`): however the flag was spelled, the value is there.
 */
export function carriesRun(argv: readonly string[], run: readonly string[]): boolean {
  if (argv.some((_, i) => run.every((part, k) => argv[i + k] === part))) return true;
  const [flag, value] = run;
  if (run.length !== 2 || !flag!.startsWith('-') || value === undefined) return false;
  const name = flag!.replace(/^-+/, '');
  const spellings = [`-${name}`, `--${name}`];
  return argv.some((arg, i) => spellings.some((f) => (arg === f && argv[i + 1] === value) || arg === `${f}=${value}`));
}

/**
 * The argv of `pid` (`/proc/<pid>/cmdline`, else `ps`, whose answer is split on whitespace);
 * undefined once it is gone or when neither can tell.
 */
export function processArgv(pid: number): string[] | undefined {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\u0000').filter((a) => a.length > 0);
    if (argv.length > 0) return argv;
  } catch {
    // No /proc (or gone): ask ps.
  }
  try {
    const text = execFileSync('ps', ['-o', 'args=', '-p', String(pid)], { encoding: 'utf8', timeout: 5_000 }).trim();
    return text ? text.split(/\s+/) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The processes whose command line carries every one of `markers` as a run of consecutive
 * arguments (e.g. `['--db-filename', '/home/me/.keelson/temporal/dev.db']`, see {@link carriesRun}):
 * ownership proved by what the process was started with, never by a recorded pid alone (pids are
 * reused; a record outlives a crash). This process is never among them.
 */
export async function findOwnedProcesses(markers: readonly (readonly string[])[]): Promise<ProcessInfo[]> {
  return (await listProcesses()).filter((p) => p.pid !== process.pid && markers.every((m) => carriesRun(p.argv, m)));
}

/**
 * Whether the live process `pid` (a recorded one, say) is ours: its command line carries every one
 * of `markers` (the state path of this home). A pid alone proves nothing; this is the check for one.
 */
export function ownsProcess(pid: number, markers: readonly (readonly string[])[]): boolean {
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return false;
  const argv = processArgv(pid);
  return argv !== undefined && markers.every((m) => carriesRun(argv, m));
}

/** True while a process with this pid exists and is not a zombie (signal 0, then its `/proc` state). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return true; // no /proc: signal 0 is all we know
  }
}

/** Sends `signal` to the process group led by `pid` (to the process alone when it leads none). */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/**
 * Ends a process group: SIGTERM (or `first`), then SIGKILL after `graceMs` if its leader still
 * lives. Resolves once the leader is gone (or after the SIGKILL's own short grace).
 */
export async function endProcessGroup(pgid: number, opts: { first?: NodeJS.Signals; graceMs?: number } = {}): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pgid, sig);
    } catch {
      // Already gone.
    }
  };
  // The leader counts until it is reaped (signal 0): a zombie leader may still have live members.
  const exists = () => {
    try {
      process.kill(pgid, 0);
      return true;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM';
    }
  };
  signal(opts.first ?? 'SIGTERM');
  const deadline = Date.now() + (opts.graceMs ?? 5_000);
  while (exists() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (!exists()) return;
  signal('SIGKILL');
  const killed = Date.now() + 2_000;
  while (exists() && Date.now() < killed) await new Promise((r) => setTimeout(r, 50));
}

/**
 * When `pid` started, in clock ticks since boot (`/proc/<pid>/stat` field 22); undefined without
 * /proc or once it is gone. Two processes' start times order them, which tells a reused pid apart.
 */
export function processStartTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  } catch {
    return undefined;
  }
}

/** The Keelson home whose state this process's supervised children are marked with (see {@link supervisorName}). */
let ownerHome: string | undefined;

/**
 * Marks every process group this process starts from now on (harness CLIs, bash and script
 * nodes) with `home`, so the next start on the same home finds the groups a crash orphaned.
 * `npm start` and the standalone worker call it with their KEELSON_HOME.
 */
export function setSupervisorOwner(home: string | undefined): void {
  ownerHome = home;
}

/**
 * The `$0` a supervisor shell of `kind` runs under: `keelson-<kind>:<home>` once an owner home
 * is set, else `keelson-<kind>`. It is the command line's proof of who started the group.
 */
export function supervisorName(kind: 'turn' | 'node'): string {
  return ownerHome ? `keelson-${kind}:${ownerHome}` : `keelson-${kind}`;
}

/** A supervised process group whose owner is gone. */
export interface OrphanGroup {
  pgid: number;
  /** `turn` (a harness CLI) or `node` (a bash or script node). */
  kind: 'turn' | 'node';
  /** The pid of the process that started it (dead, or reused by a younger process). */
  ownerPid: number;
  /** The supervised command (after the supervisor's own arguments). */
  command: string[];
}

/**
 * Supervised groups (`sh -c <supervisor> keelson-<kind>:<home> <ownerPid> [<record>] <argv…>`, the record a node's) of `home`
 * whose owner is dead, or whose owner pid now names a process younger than the group (the pid was
 * reused): orphans of a crash. Ownership is read from each command line, never from a pid alone.
 */
export async function findOrphanGroups(home: string): Promise<OrphanGroup[]> {
  const found = new Map<number, OrphanGroup>();
  for (const p of await listProcesses()) {
    if (p.argv[1] !== '-c' || found.has(p.pgid) || p.pgid !== p.pid) continue;
    const mark = /^keelson-(turn|node):(.+)$/.exec(p.argv[3] ?? '');
    if (!mark || mark[2] !== home) continue;
    const ownerPid = Number(p.argv[4]);
    if (!Number.isInteger(ownerPid) || ownerPid <= 0) continue;
    const ownerStart = isAlive(ownerPid) ? processStartTicks(ownerPid) : undefined;
    const groupStart = processStartTicks(p.pid);
    const orphaned = ownerStart === undefined || (groupStart !== undefined && ownerStart > groupStart);
    // A node's supervisor carries its attempt's record path before the command.
    if (orphaned) found.set(p.pgid, { pgid: p.pgid, kind: mark[1] as 'turn' | 'node', ownerPid, command: p.argv.slice(mark[1] === 'node' ? 6 : 5) });
  }
  return [...found.values()];
}

/** Ends every orphaned group of `home` (SIGTERM, SIGKILL after `graceMs`); returns what it ended. */
export async function endOrphanGroups(home: string, graceMs = 2_000): Promise<OrphanGroup[]> {
  const orphans = await findOrphanGroups(home);
  await Promise.all(orphans.map((o) => endProcessGroup(o.pgid, { graceMs })));
  return orphans;
}
