import { spawn } from 'node:child_process';
import { GitError, gitInvocation, isGitCommand } from '@keelson/platform';
import type { RibExec, RibExecOptions, RibExecResult } from '@keelson/ribs-contract';

/** Options of the host's process runner. */
export interface ExecOptions {
  /** Applied when a call sets no `timeoutMs`. @default 30000 */
  defaultTimeoutMs?: number;
  /** stdout and stderr are each cut at this many bytes (the run fails). @default 16777216 */
  maxOutputBytes?: number;
  /** Aborting kills every process still running (host shutdown). */
  signal?: AbortSignal;
  /** How long a killed process gets between SIGTERM and SIGKILL. @default 2000 */
  killGraceMs?: number;
}

/** The resolved limits every run of one `createExec` shares. */
interface ExecLimits {
  defaultTimeoutMs: number;
  maxOutputBytes: number;
  killGraceMs: number;
  signal?: AbortSignal;
}

interface RawRun {
  stdout: string;
  stderr: string;
  exitCode: number | null;
  failure?: string;
}

/**
 * `RibExec` over `child_process.spawn`: no shell, its own process group (a timeout or abort kills
 * the whole group), bounded output, and a result instead of a throw. A `git` command runs hardened
 * (`gitInvocation` of @keelson/platform: a repository's config runs no hook, fsmonitor, driver or
 * helper, https/ssh only, no prompt), whichever rib runs it.
 */
export function createExec(options: ExecOptions = {}): RibExec {
  const limits: ExecLimits = {
    defaultTimeoutMs: options.defaultTimeoutMs ?? 30_000,
    maxOutputBytes: options.maxOutputBytes ?? 16 * 1024 * 1024,
    killGraceMs: options.killGraceMs ?? 2_000,
    signal: options.signal,
  };

  async function run(cmd: string, args: readonly string[], opts: RibExecOptions = {}): Promise<RawRun> {
    const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env };
    if (!isGitCommand(cmd)) return spawnRun(cmd, args, env, opts, limits);
    if ([opts.signal, options.signal].some((s) => s?.aborted)) return { stdout: '', stderr: '', exitCode: null, failure: 'aborted' };
    try {
      const git = await gitInvocation(args, { cwd: opts.cwd ?? process.cwd(), env, signal: opts.signal });
      return await spawnRun('git', git.args, git.env, opts, limits);
    } catch (err) {
      // The repository's config could not be read (or the read timed out): git does not run.
      const failed = err instanceof GitError ? err : undefined;
      return { stdout: '', stderr: failed?.stderr ?? '', exitCode: failed?.exitCode ?? null, failure: (err as Error).message };
    }
  }

  return {
    async runText(cmd, args, opts = {}) {
      const raw = await run(cmd, args, opts);
      return settle(raw, opts, (stdout) => ({ ok: true, data: stdout, exitCode: raw.exitCode }));
    },
    async runJSON<T = unknown>(cmd: string, args: readonly string[], opts: RibExecOptions = {}) {
      const raw = await run(cmd, args, opts);
      return settle<T>(raw, opts, (stdout) => {
        try {
          return { ok: true, data: JSON.parse(stdout) as T, exitCode: raw.exitCode };
        } catch (e) {
          return { ok: false, error: `stdout is not JSON: ${(e as Error).message}`, code: raw.exitCode };
        }
      });
    },
  };
}

/** Spawns one process in its own group and collects its output; a timeout, an abort or an over-long output stops the group. */
function spawnRun(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv, opts: RibExecOptions, limits: ExecLimits): Promise<RawRun> {
  const { maxOutputBytes, killGraceMs } = limits;
  const timeoutMs = opts.timeoutMs ?? limits.defaultTimeoutMs;
  return new Promise((resolve) => {
    const signals = [opts.signal, limits.signal].filter((s): s is AbortSignal => s !== undefined);
    if (signals.some((s) => s.aborted)) return resolve({ stdout: '', stderr: '', exitCode: null, failure: 'aborted' });

    const child = spawn(cmd, [...args], {
      cwd: opts.cwd,
      env,
      stdio: [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
      detached: true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let failure: string | undefined;
    let settled = false;
    let graceTimer: NodeJS.Timeout | undefined;

    const killGroup = (signal: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        // The group is already gone.
      }
    };
    const stop = (why: string) => {
      if (failure !== undefined || settled) return;
      failure = why;
      killGroup('SIGTERM');
      graceTimer = setTimeout(() => killGroup('SIGKILL'), killGraceMs);
      graceTimer.unref();
    };
    const timer = setTimeout(() => stop(`timed out after ${timeoutMs}ms`), timeoutMs);
    const onAbort = () => stop('aborted');
    for (const s of signals) s.addEventListener('abort', onAbort, { once: true });

    const collect = (chunks: Buffer[], add: (n: number) => number, stream: string) => (chunk: Buffer) => {
      if (add(chunk.length) > maxOutputBytes) return stop(`${stream} exceeded ${maxOutputBytes} bytes`);
      chunks.push(chunk);
    };
    child.stdout?.on('data', collect(out, (n) => (outBytes += n), 'stdout'));
    child.stderr?.on('data', collect(err, (n) => (errBytes += n), 'stderr'));
    if (opts.input !== undefined && child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input);
    }

    const finish = (exitCode: number | null, spawnError?: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (graceTimer) clearTimeout(graceTimer);
      for (const s of signals) s.removeEventListener('abort', onAbort);
      const notFound = (spawnError as NodeJS.ErrnoException | undefined)?.code === 'ENOENT';
      resolve({
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        exitCode,
        failure: failure ?? (spawnError ? (notFound ? `command not found: ${cmd}` : spawnError.message) : undefined),
      });
    };
    child.on('error', (e) => finish(null, e));
    child.on('close', (code) => finish(code));
  });
}

/** The call's result from a raw run: its failure, a non-zero exit (unless accepted), else `parse` of stdout. */
function settle<T>(raw: RawRun, opts: RibExecOptions, parse: (stdout: string) => RibExecResult<T>): RibExecResult<T> {
  if (raw.failure !== undefined) return { ok: false, error: raw.failure, code: raw.exitCode, stderr: raw.stderr || undefined };
  if (raw.exitCode !== 0 && !opts.acceptNonZeroExit) {
    const detail = raw.stderr.trim() || raw.stdout.trim();
    return { ok: false, error: detail || `exited with code ${raw.exitCode}`, code: raw.exitCode, stderr: raw.stderr || undefined };
  }
  return parse(raw.stdout);
}
