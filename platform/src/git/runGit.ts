import { spawn } from 'node:child_process';
import {
  DRIVER_KEYS_REGEXP,
  driverPins,
  hardenedGitArgs,
  hardenedGitEnv,
  mayRunDrivers,
  repositoryLocalKeys,
  splitGlobalOptions,
  type GitCredentials,
  type GitHardeningOptions,
} from './gitHardening';

export interface GitResult {
  stdout: string;
  stderr: string;
}

/** A git run that failed: it could not start, exited non-zero, timed out or was aborted. */
export class GitError extends Error {
  constructor(
    message: string,
    readonly exitCode: number | null,
    readonly stderr: string,
    readonly timedOut: boolean,
  ) {
    super(message);
    this.name = 'GitError';
  }
}

export interface GitInvocationOptions extends GitHardeningOptions {
  /** Where git runs (the repository, for commands on one). */
  cwd: string;
  /** The operator's environment (identity, GIT_CONFIG_GLOBAL, CA bundle, PATH); scrubbed before use. */
  env: NodeJS.ProcessEnv;
  /**
   * Credentials for an https clone: git asks a one-shot helper that reads them from its environment,
   * so they never appear on a command line, in the clone's remote or in git's messages.
   */
  credentials?: GitCredentials;
  /** Bound of the repository-config read that precedes a driver-capable command. @default 10000 */
  configTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface RunGitOptions extends GitInvocationOptions {
  /** Kills the whole process group (git and its helpers) after this long. @default 30000 */
  timeoutMs?: number;
}

/** What to spawn: always the `git` on PATH, with these arguments and this environment. */
export interface GitInvocation {
  args: string[];
  env: Record<string, string>;
}

function subcommandOf(args: readonly string[]): string {
  return splitGlobalOptions(args).command[0] ?? 'git';
}

/**
 * Spawns one git process in its own process group, stdin closed; a timeout or abort kills the whole
 * group (git-remote-https, ssh, helpers), not just git.
 */
function spawnGit(invocation: GitInvocation, opts: { cwd: string; timeoutMs: number; signal?: AbortSignal; label: string }): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(new GitError(`git ${opts.label} was aborted`, null, '', false));
    const child = spawn('git', invocation.args, { cwd: opts.cwd, env: invocation.env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    let stopped: 'timeout' | 'abort' | undefined;
    const killGroup = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      stopped = 'timeout';
      killGroup();
    }, opts.timeoutMs);
    const onAbort = () => {
      stopped ??= 'abort';
      killGroup();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (err) => {
      done();
      reject(new GitError(`git ${opts.label} could not start: ${err.message}`, null, '', false));
    });
    child.on('close', (code) => {
      done();
      if (code === 0 && !stopped) return resolve({ stdout, stderr });
      const why = stopped === 'timeout' ? `timed out after ${opts.timeoutMs} ms` : stopped === 'abort' ? 'was aborted' : `exited with ${code}`;
      reject(new GitError(`git ${opts.label} ${why}: ${stderr.trim().split('\n').slice(-3).join(' ')}`.trim(), code, stderr, stopped === 'timeout'));
    });
  });
}

/**
 * The hardened form of `git <args>` (see `gitHardening.ts`): pinned configuration after the caller's
 * own global options, a scrubbed environment, and — for a command that may run a filter, diff or merge
 * driver — every driver the repository's own config declares pinned to nothing. The repository read
 * fails closed: a config git cannot read fails the call.
 */
export async function gitInvocation(args: readonly string[], opts: GitInvocationOptions): Promise<GitInvocation> {
  const env = hardenedGitEnv(opts.env, opts);
  const base = { ...opts, sshCommand: env.GIT_SSH_COMMAND };
  const { global, command } = splitGlobalOptions(args);
  let pins: string[] = [];
  if (mayRunDrivers(command)) {
    const read = [...global, 'config', '--show-scope', '-z', '--name-only', '--get-regexp', DRIVER_KEYS_REGEXP];
    const listed = await spawnGit(
      { args: hardenedGitArgs(read, { ...base, credentials: undefined }), env },
      { cwd: opts.cwd, timeoutMs: opts.configTimeoutMs ?? 10_000, signal: opts.signal, label: 'config (repository drivers)' },
    ).catch((err: GitError) => {
      // `--get-regexp` exits 1 when nothing matches; anything else is a config git cannot read.
      if (err.exitCode === 1 && !err.timedOut && !err.stderr.trim()) return { stdout: '', stderr: '' };
      throw err;
    });
    pins = driverPins(repositoryLocalKeys(listed.stdout));
  }
  return { args: hardenedGitArgs(args, { ...base, driverPins: pins }), env };
}

/**
 * Runs `git <args>` hardened (see `gitInvocation`), non-interactively and bounded. Every git call
 * the mesh makes goes through here or through `gitInvocation`. Resolves with the output of a zero
 * exit; rejects with a `GitError` otherwise.
 */
export async function runGit(args: readonly string[], opts: RunGitOptions): Promise<GitResult> {
  const invocation = await gitInvocation(args, opts);
  return spawnGit(invocation, { cwd: opts.cwd, timeoutMs: opts.timeoutMs ?? 30_000, signal: opts.signal, label: subcommandOf(args) });
}

/** Whether a command names git (`git`, `/usr/bin/git`): the rib host hardens those. */
export function isGitCommand(cmd: string): boolean {
  return cmd === 'git' || /(^|\/)git$/.test(cmd);
}
