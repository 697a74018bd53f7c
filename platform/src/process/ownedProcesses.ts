import { execFile } from 'node:child_process';
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
 * The processes whose command line carries every one of `markers` as a run of consecutive
 * arguments (e.g. `['--db-filename', '/home/me/.keelson/temporal/dev.db']`): ownership proved by
 * what the process was started with, never by a recorded pid alone (pids are reused; a record
 * outlives a crash). This process is never among them.
 */
export async function findOwnedProcesses(markers: readonly (readonly string[])[]): Promise<ProcessInfo[]> {
  const carries = (argv: string[], run: readonly string[]) =>
    argv.some((_, i) => run.every((part, k) => argv[i + k] === part));
  return (await listProcesses()).filter((p) => p.pid !== process.pid && markers.every((m) => carries(p.argv, m)));
}

/** True while a process with this pid exists (signal 0). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
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
  signal(opts.first ?? 'SIGTERM');
  const deadline = Date.now() + (opts.graceMs ?? 5_000);
  while (isAlive(pgid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (!isAlive(pgid)) return;
  signal('SIGKILL');
  const killed = Date.now() + 2_000;
  while (isAlive(pgid) && Date.now() < killed) await new Promise((r) => setTimeout(r, 50));
}
