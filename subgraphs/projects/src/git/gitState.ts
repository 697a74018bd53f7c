import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { runGit } from '@keelson/platform';

export interface GitState {
  isGitRepo: boolean;
  /** null for unborn repositories and non-git folders. */
  headCommit: string | null;
}

/** Reads a root's git state at call time: `.git` present → a repository; HEAD resolved if born. */
export async function readGitState(root: string, env: NodeJS.ProcessEnv): Promise<GitState> {
  const isGitRepo = await stat(join(root, '.git')).then(() => true, () => false);
  if (!isGitRepo) return { isGitRepo, headCommit: null };
  const head = await runGit(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], { cwd: root, env, timeoutMs: 10_000 }).then(
    (r) => r.stdout.trim() || null,
    () => null,
  );
  return { isGitRepo, headCommit: head };
}

/** The configured identity keys that are missing (`user.name`, `user.email`), honouring GIT_* overrides. */
export async function missingGitIdentity(cwd: string, env: NodeJS.ProcessEnv): Promise<string[]> {
  const get = (key: string) =>
    runGit(['config', '--get', key], { cwd, env, timeoutMs: 10_000 }).then((r) => r.stdout.trim(), () => '');
  const missing: string[] = [];
  const name = (env.GIT_AUTHOR_NAME && env.GIT_COMMITTER_NAME) || (await get('user.name'));
  const email = (env.GIT_AUTHOR_EMAIL && env.GIT_COMMITTER_EMAIL) || (await get('user.email'));
  if (!name) missing.push('user.name');
  if (!email) missing.push('user.email');
  return missing;
}
