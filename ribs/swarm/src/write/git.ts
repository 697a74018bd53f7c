import { execFile } from 'node:child_process';

/** A git command that failed (its stderr says why). */
export class GitFailure extends Error {
  constructor(
    readonly args: readonly string[],
    readonly code: number | null,
    readonly stderr: string,
  ) {
    super(`git ${args.join(' ')} failed (${code ?? 'killed'}): ${stderr.trim().split('\n').slice(-3).join(' ')}`);
    this.name = 'GitFailure';
  }
}

/**
 * Runs git non-interactively (no prompt, no askpass, C locale) in `cwd`, within `timeoutMs`.
 * @returns stdout
 */
export function git(args: readonly string[], opts: { cwd: string; env: Record<string, string | undefined>; timeoutMs?: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...args],
      {
        cwd: opts.cwd,
        timeout: opts.timeoutMs ?? 60_000,
        maxBuffer: 16 * 1024 * 1024,
        env: { ...opts.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: '', SSH_ASKPASS: '', LC_ALL: 'C' } as NodeJS.ProcessEnv,
      },
      (err, stdout, stderr) => {
        if (err) reject(new GitFailure(args, typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : null, String(stderr)));
        else resolve(String(stdout));
      },
    );
  });
}
