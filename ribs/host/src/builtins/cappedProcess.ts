import { spawn, type ChildProcess } from 'node:child_process';

/** How one process run ended and what it printed (capped). */
export interface CappedRun {
  /** stdout (and stderr when merged), cut to the cap with a note where bytes were left out. */
  output: string;
  /** stderr when not merged (its first 16 KiB). */
  stderr: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** The output reached the cap in `head` mode and the process was stopped there. */
  full: boolean;
  /** Bytes of output left out. */
  omittedBytes: number;
  /** Set when the process could not be started. */
  spawnError?: string;
}

export interface CappedRunOptions {
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Bytes of output kept. */
  maxBytes: number;
  /** `head-and-tail` keeps the first and last halves (a shell); `head` keeps the start and stops the process once full (a search). */
  keep: 'head-and-tail' | 'head';
  /** Interleave stderr into `output`. */
  mergeStderr: boolean;
  /** Between SIGTERM and SIGKILL. @default 2000 */
  killGraceMs?: number;
}

const STDERR_BYTES = 16 * 1024;
/** How long pipes may stay open once the process exited and its group was killed (a daemon that left the group). */
const CLOSE_GRACE_MS = 1000;

/** Keeps a process's output within `maxBytes`: its head, and in `head-and-tail` mode its tail too; `onFull` fires once when `head` mode fills. */
function cappedOutput(maxBytes: number, keep: CappedRunOptions['keep'], onFull: () => void) {
  const headMax = keep === 'head' ? maxBytes : Math.floor(maxBytes / 2);
  const tailMax = maxBytes - headMax;
  const head: Buffer[] = [];
  let headBytes = 0;
  let tail = Buffer.alloc(0);
  let total = 0;
  let full = false;
  return {
    isFull: () => full,
    collect(chunk: Buffer) {
      total += chunk.length;
      if (headBytes < headMax) {
        const take = chunk.subarray(0, headMax - headBytes);
        head.push(take);
        headBytes += take.length;
        chunk = chunk.subarray(take.length);
      }
      if (chunk.length === 0) return;
      if (keep === 'head') {
        if (!full) {
          full = true;
          onFull();
        }
        return;
      }
      tail = Buffer.concat([tail, chunk]);
      if (tail.length > tailMax) tail = tail.subarray(tail.length - tailMax);
    },
    /** The kept output, with a note where bytes were left out, and how many were. */
    render(): { output: string; omitted: number } {
      const kept = headBytes + tail.length;
      const omitted = keep === 'head' ? total - headBytes : Math.max(0, total - kept);
      const headText = Buffer.concat(head).toString('utf8');
      const output =
        keep === 'head' || omitted === 0 ? headText + tail.toString('utf8') : `${headText}\n[… ${omitted} bytes of output omitted …]\n${tail.toString('utf8')}`;
      return { output, omitted };
    },
  };
}

/** Keeps the first `STDERR_BYTES` of a separate stderr. */
function stderrHead() {
  const errParts: Buffer[] = [];
  let errBytes = 0;
  return {
    collect(chunk: Buffer) {
      if (errBytes < STDERR_BYTES) {
        errParts.push(chunk.subarray(0, STDERR_BYTES - errBytes));
        errBytes += Math.min(chunk.length, STDERR_BYTES - errBytes);
      }
    },
    text: () => Buffer.concat(errParts).toString('utf8'),
  };
}

/** Signals the child's process group: `killGroup` at once, `stop` as SIGTERM then SIGKILL after `grace` (its timer joins `timers`). */
function groupKiller(child: ChildProcess, grace: number, timers: NodeJS.Timeout[]) {
  const killGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The group is gone already.
    }
  };
  const stop = () => {
    killGroup('SIGTERM');
    const t = setTimeout(() => killGroup('SIGKILL'), grace);
    t.unref();
    timers.push(t);
  };
  return { killGroup, stop };
}

/**
 * Runs a process in its own process group with bounded output. A timeout or abort sends the group
 * SIGTERM, then SIGKILL after a grace; when the process exits, whatever it left running in its
 * group is killed too (no background leftovers outlive the call). Never rejects.
 */
export function runCapped(opts: CappedRunOptions): Promise<CappedRun> {
  const grace = opts.killGraceMs ?? 2000;
  return new Promise((resolve) => {
    if (opts.signal?.aborted) {
      resolve({ output: '', stderr: '', exitCode: null, signal: null, timedOut: false, aborted: true, full: false, omittedBytes: 0 });
      return;
    }
    const child = spawn(opts.argv[0]!, opts.argv.slice(1), { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let timedOut = false;
    let aborted = false;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const { killGroup, stop } = groupKiller(child, grace, timers);
    const out = cappedOutput(opts.maxBytes, opts.keep, stop);
    const err = stderrHead();

    const onAbort = () => {
      if (exit || aborted) return;
      aborted = true;
      stop();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    timers.push(
      setTimeout(() => {
        if (exit) return;
        timedOut = true;
        stop();
      }, opts.timeoutMs),
    );

    child.stdout.on('data', out.collect);
    child.stderr.on('data', (chunk: Buffer) => {
      if (opts.mergeStderr) return out.collect(chunk);
      err.collect(chunk);
    });

    const finish = (spawnError?: string) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      opts.signal?.removeEventListener('abort', onAbort);
      const { output, omitted } = out.render();
      resolve({
        output,
        stderr: err.text(),
        exitCode: exit?.code ?? null,
        signal: exit?.signal ?? null,
        timedOut,
        aborted,
        full: out.isFull(),
        omittedBytes: omitted,
        ...(spawnError ? { spawnError } : {}),
      });
    };
    child.on('error', (e) => finish(e.message));
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      // Background leftovers in the group die with the call; a daemon that left the group cannot hold the pipes open for long.
      killGroup('SIGKILL');
      const t = setTimeout(() => {
        child.stdout.destroy();
        child.stderr.destroy();
        finish();
      }, CLOSE_GRACE_MS);
      t.unref();
      timers.push(t);
    });
    child.on('close', () => finish());
  });
}
