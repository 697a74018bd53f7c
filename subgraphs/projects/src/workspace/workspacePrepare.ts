import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { sandboxEnv, type ProcessSandbox } from '@keelson/platform';
import { WorkspacePrepareStatus, type WorkspacePrepare } from './workspace.entity';

/** Bytes of a prepare's output kept on the lease: its end. */
export const PREPARE_LOG_BYTES = 16 * 1024;

/**
 * What a worktree's files say to prepare, first match wins: each a lockfile (or module file) at the
 * worktree's root and the command that installs exactly what it pins.
 */
export const PREPARE_DETECTORS: readonly { file: string; command: readonly string[] }[] = [
  { file: 'package-lock.json', command: ['npm', 'ci', '--no-audit', '--no-fund'] },
  { file: 'npm-shrinkwrap.json', command: ['npm', 'ci', '--no-audit', '--no-fund'] },
  { file: 'pnpm-lock.yaml', command: ['pnpm', 'install', '--frozen-lockfile'] },
  { file: 'yarn.lock', command: ['yarn', 'install', '--frozen-lockfile'] },
  { file: 'go.mod', command: ['go', 'mod', 'download'] },
];

/** The prepare command the worktree's root files call for, or null (nothing to prepare). */
export function detectPrepare(worktree: string): { command: string[]; detectedFrom: string } | null {
  for (const d of PREPARE_DETECTORS) {
    if (existsSync(join(worktree, d.file))) return { command: [...d.command], detectedFrom: d.file };
  }
  return null;
}

export interface PrepareOptions {
  worktree: string;
  /** Writable beside the worktree: the package managers' caches (one per project). */
  cacheDir: string;
  sandbox: ProcessSandbox;
  /** The environment the command's starts from (only its `sandboxEnv` allowlist passes). */
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
}

/**
 * Prepares a fresh worktree: detects the command (see {@link PREPARE_DETECTORS}) and runs it in the
 * sandbox — only the worktree and `cacheDir` writable (the worktree's `.git` read-only), a private
 * /tmp, the keelson home hidden, WITH network (it downloads) —, the environment the `sandboxEnv`
 * allowlist plus the caches pointed into `cacheDir`. Its own process group; a timeout kills the group.
 * Never rejects for the command's failure: that is a FAILED result with its log tail.
 * @throws SandboxUnavailableError when the sandbox is required and unusable
 */
export async function prepareWorktree(opts: PrepareOptions): Promise<WorkspacePrepare> {
  const detected = detectPrepare(opts.worktree);
  if (!detected) return { command: null, detectedFrom: null, status: WorkspacePrepareStatus.SKIPPED, exitCode: null, durationMs: null, log: null };
  await mkdir(opts.cacheDir, { recursive: true });
  const sandboxed = await opts.sandbox.command({
    // stderr joins stdout's pipe before the command starts, so the log keeps the order it was written in.
    argv: ['bash', '-c', 'exec "$@" 2>&1', 'bash', ...detected.command],
    cwd: opts.worktree,
    writable: [opts.worktree, opts.cacheDir],
    network: true,
    what: `the workspace prepare step (${detected.command.join(' ')})`,
  });
  const cache = (name: string) => join(opts.cacheDir, name);
  const env: Record<string, string> = {
    ...sandboxEnv(opts.env),
    PWD: opts.worktree,
    CI: 'true',
    npm_config_cache: cache('npm'),
    npm_config_update_notifier: 'false',
    npm_config_store_dir: cache('pnpm-store'),
    YARN_CACHE_FOLDER: cache('yarn'),
    GOMODCACHE: cache('go/mod'),
    GOCACHE: cache('go/build'),
    XDG_CACHE_HOME: cache('xdg'),
    ...(sandboxed.sandboxed ? { TMPDIR: '/tmp' } : {}),
  };
  const started = Date.now();
  const r = await runBounded(sandboxed.argv, opts.worktree, env, opts.timeoutMs);
  const durationMs = Date.now() - started;
  const base = { command: detected.command, detectedFrom: detected.detectedFrom, durationMs };
  if (r.spawnError) return { ...base, status: WorkspacePrepareStatus.FAILED, exitCode: null, log: `could not start: ${r.spawnError}` };
  const note = r.timedOut ? `\n[timed out after ${opts.timeoutMs} ms; the process group was killed]` : r.signal ? `\n[killed by ${r.signal}]` : '';
  const log = (r.output + note).slice(-PREPARE_LOG_BYTES);
  const ok = !r.timedOut && r.exitCode === 0;
  return { ...base, status: ok ? WorkspacePrepareStatus.SUCCEEDED : WorkspacePrepareStatus.FAILED, exitCode: r.timedOut ? null : r.exitCode, log };
}

interface BoundedRun {
  output: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  spawnError?: string;
}

/** Runs argv in its own process group, keeping the last {@link PREPARE_LOG_BYTES} of its output; the group is killed on timeout and when it exits. */
function runBounded(argv: readonly string[], cwd: string, env: Record<string, string>, timeoutMs: number): Promise<BoundedRun> {
  return new Promise((resolve) => {
    const child = spawn(argv[0]!, argv.slice(1), { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let tail = Buffer.alloc(0);
    let timedOut = false;
    const keep = (chunk: Buffer) => {
      tail = Buffer.concat([tail, chunk]);
      if (tail.length > PREPARE_LOG_BYTES * 2) tail = tail.subarray(tail.length - PREPARE_LOG_BYTES);
    };
    const killGroup = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // the group is gone already
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup('SIGTERM');
      setTimeout(() => killGroup('SIGKILL'), 2000).unref();
    }, timeoutMs);
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ output: '', exitCode: null, signal: null, timedOut: false, spawnError: err.message });
    });
    // Nothing it started in the background outlives it (nor holds its pipes open).
    child.on('exit', () => killGroup('SIGKILL'));
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const text = tail.subarray(Math.max(0, tail.length - PREPARE_LOG_BYTES)).toString('utf8');
      resolve({ output: text, exitCode: code, signal, timedOut });
    });
  });
}
