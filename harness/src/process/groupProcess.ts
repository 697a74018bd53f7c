import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { supervisorName } from '@keelson/platform';

/**
 * Runs the CLI under a small `sh` supervisor that leads a fresh process group. The supervisor also
 * starts a watchdog: when the owning process dies (even by SIGKILL) the watchdog kills the whole
 * group within about a second, so a turn orphaned by a lost worker never keeps running behind a
 * retry's back. Its `$0` names the Keelson home that owns it (see `supervisorName`), so a start
 * finds what a crash orphaned even if the watchdog died too. `$1` is the owner's pid, the rest is the CLI's argv; stdin is always /dev/null.
 */
const SUPERVISOR = [
  'owner="$1"; shift',
  '( while kill -0 "$owner" 2>/dev/null; do sleep 1; done; kill -KILL 0 ) </dev/null >/dev/null 2>&1 &',
  'dog=$!',
  '"$@" </dev/null &',
  'cli=$!',
  'wait "$cli"; rc=$?',
  'kill "$dog" 2>/dev/null',
  'exit "$rc"',
].join('\n');

export interface GroupProcessSpec {
  /** The CLI and its arguments (argv[0] an absolute path). */
  argv: string[];
  cwd: string;
  /** The whole environment the CLI sees (nothing is inherited). */
  env: Record<string, string>;
  /** The process whose death ends the group. @default process.pid */
  ownerPid?: number;
  /** Bytes of stderr kept (the tail) for error reports. @default 8192 */
  stderrBytes?: number;
  /**
   * How long stdout may stay open once the group is empty (what the CLI wrote is read meanwhile);
   * then the pipes are closed. @default 2000
   */
  drainMs?: number;
}

export interface GroupExit {
  /** The CLI's exit code (128 + n when a signal ended it under the supervisor). */
  code: number | null;
  signal: NodeJS.Signals | null;
  /**
   * Set when a process that left the group (`setsid`) still held stdout open after the group was
   * empty: the pipes were closed on it after `drainMs`, and it is not this group's to kill.
   */
  outputHeldOpen?: true;
}

/** A CLI running in its own process group. */
export interface GroupProcess {
  /** The supervisor's pid, which is also the process group id. */
  readonly pgid: number;
  /**
   * stdout, line by line, until it closes; every line is kept from the start, however late the reading
   * begins. Read it to the end: some CLIs die when it is closed early, and past 1,024 unread lines
   * stdout is paused.
   */
  readonly lines: AsyncIterable<string>;
  /** Resolves once the supervisor exited, no member of the group is left and stdout closed. */
  readonly exited: Promise<GroupExit>;
  /** The last bytes the CLI wrote to stderr. */
  stderr(): string;
  /** SIGTERM to the group, SIGKILL after `graceMs`; resolves when the group is empty. Idempotent. */
  kill(graceMs?: number): Promise<void>;
}

/** Whether a live (not zombie) process of group `pgid` is in /proc; undefined without /proc. */
function liveInProc(pgid: number): boolean | undefined {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^[0-9]+$/.test(d));
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue;
    }
    // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so split after the last `)`.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

/**
 * True while a live process of group `pgid` exists. Zombies do not count: where PID 1 is slow to
 * reap orphans, a killed process lingers as one without running anything.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return liveInProc(pgid) ?? true;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // Already gone.
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until group `pgid` is empty, or `ms` passed; true when empty. */
export async function waitGroupEmpty(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (groupAlive(pgid)) {
    if (Date.now() >= deadline) return false;
    await sleep(25);
  }
  return true;
}

/** SIGTERM, then SIGKILL after the grace, until group `pgid` is empty. */
export async function killGroup(pgid: number, graceMs = 2000): Promise<void> {
  if (!groupAlive(pgid)) return;
  signalGroup(pgid, 'SIGTERM');
  if (await waitGroupEmpty(pgid, graceMs)) return;
  signalGroup(pgid, 'SIGKILL');
  await waitGroupEmpty(pgid, 5000);
}

/**
 * Starts `spec.argv` in a new process group (see {@link SUPERVISOR}). Stragglers the CLI leaves in
 * its group after it exits are killed before `exited` resolves, so a finished turn leaves nothing
 * behind.
 * @throws when the supervisor cannot be spawned.
 */
export function startGroupProcess(spec: GroupProcessSpec): GroupProcess {
  const child = spawn('/bin/sh', ['-c', SUPERVISOR, supervisorName('turn'), String(spec.ownerPid ?? process.pid), ...spec.argv], {
    cwd: spec.cwd,
    env: spec.env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`could not start ${spec.argv[0]}`);
  const pgid = child.pid;
  const maxErr = spec.stderrBytes ?? 8192;
  let errTail = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    errTail = (errTail + chunk).slice(-maxErr);
  });
  const rl = createInterface({ input: child.stdout!, crlfDelay: Infinity });
  // The iterator is made now, not when the caller first reads: readline emits lines as they come and
  // `close` once stdout ends, whether or not anyone listens. An iterator made later would miss the
  // lines already emitted and, after the close, never end (a CLI that finished before its turn began
  // reading would hang the turn). Made here, it queues every line until it is read.
  const lines = rl[Symbol.asyncIterator]();

  // The supervisor exits when the CLI does; stdout closes only once every holder of the pipe is gone
  // (a background process the CLI left behind keeps it open), so exit is watched, not close.
  const exit = new Promise<GroupExit>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  const closed = new Promise<void>((resolve) => {
    child.once('close', () => resolve());
    child.once('error', () => resolve());
  });
  let killing: Promise<void> | undefined;
  const exited = exit.then(async (result) => {
    // The CLI is done; whatever it left in its group (background shells, the watchdog's sleep) goes
    // too, which releases stdout: what the CLI wrote is still read to the end.
    await (killing ?? killGroup(pgid, 500));
    // A process that left the group (`setsid … &`) keeps stdout open for as long as it lives; the
    // turn must not wait on it: after `drainMs` the pipes are closed and the lines end.
    let drainTimer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      closed.then(() => true),
      new Promise<false>((resolve) => {
        drainTimer = setTimeout(() => resolve(false), spec.drainMs ?? 2000);
      }),
    ]);
    clearTimeout(drainTimer);
    if (drained) return result;
    rl.close();
    child.stdout!.destroy();
    child.stderr!.destroy();
    await closed;
    return { ...result, outputHeldOpen: true as const };
  });

  return {
    pgid,
    lines,
    exited,
    stderr: () => errTail,
    kill(graceMs = 2000) {
      killing ??= killGroup(pgid, graceMs);
      return killing;
    },
  };
}
