import { runGit, GitError } from '@keelson/platform';

export { GitError as GitFailure };

export interface SwarmGitOptions {
  cwd: string;
  env: Record<string, string | undefined>;
  timeoutMs?: number;
  /** Transports beyond https and ssh (a project whose origin is a local repository needs `file`). */
  allowProtocols?: readonly string[];
}

/**
 * Runs git through the platform's hardened runner (pinned config: no hooks, fsmonitor, drivers or
 * prompts from the repository; https and ssh only unless `allowProtocols` says otherwise).
 * @returns stdout
 */
export async function git(args: readonly string[], opts: SwarmGitOptions): Promise<string> {
  const r = await runGit([...args], {
    cwd: opts.cwd,
    env: opts.env as NodeJS.ProcessEnv,
    timeoutMs: opts.timeoutMs ?? 60_000,
    ...(opts.allowProtocols ? { allowProtocols: opts.allowProtocols } : {}),
  });
  return r.stdout;
}

/** Whether a remote URL names a repository on this machine (a path or file://), fetched over the file transport. */
export function isLocalRemote(url: string): boolean {
  return url.startsWith('/') || url.startsWith('file://') || url.startsWith('./') || url.startsWith('../');
}
