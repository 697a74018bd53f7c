import { spawn } from 'node:child_process';

export interface GitResult {
  stdout: string;
  stderr: string;
}

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

export interface RunGitOptions {
  cwd: string;
  /** Environment for git (identity, GIT_CONFIG_GLOBAL, …); never interactive. */
  env: NodeJS.ProcessEnv;
  /** Kills the whole process group (git and its helpers) after this long. @default 30000 */
  timeoutMs?: number;
}

/**
 * Runs git non-interactively in its own process group: no terminal prompt, no askpass, stdin
 * closed, and a timeout that kills every helper (git-remote-https, ssh), not just git.
 */
export function runGit(args: readonly string[], opts: RunGitOptions): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, {
      cwd: opts.cwd,
      env: {
        ...opts.env,
        GIT_TERMINAL_PROMPT: '0',
        GIT_ASKPASS: '',
        SSH_ASKPASS: '',
        GCM_INTERACTIVE: 'never',
        GIT_SSH_COMMAND: opts.env.GIT_SSH_COMMAND ?? 'ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new',
        LC_ALL: 'C',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    }, opts.timeoutMs ?? 30_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new GitError(`git ${args[0]} could not start: ${err.message}`, null, '', false));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0 && !timedOut) resolve({ stdout, stderr });
      else {
        const why = timedOut ? `timed out after ${opts.timeoutMs ?? 30_000} ms` : `exited with ${code}`;
        reject(new GitError(`git ${args[0]} ${why}: ${stderr.trim().split('\n').slice(-3).join(' ')}`, code, stderr, timedOut));
      }
    });
  });
}
