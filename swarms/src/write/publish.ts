import { execFile } from 'node:child_process';
import { aiAttributionIn } from './attribution';
import { git } from './git';
import type { WriteBase } from './writeBase';

/** Whether and how write mode publishes writers' branches to origin (the operator's settings). */
export interface PublishSettings {
  /** Project ids that opted in to pushing; every other project's branches stay local. */
  projects: readonly string[];
  /**
   * The command that opens a draft pull request, as argv (`{branch}`, `{base}`, `{title}`, `{body}`
   * replaced in each element); it must carry `--draft`. Absent: branches are pushed, no request opened.
   */
  command?: readonly string[];
  /** How long the command may take. @default 60000 */
  timeoutMs?: number;
}

/** What happened to one writer's branch. */
export interface PublishedBranch {
  branch: string;
  /** Commits the branch has over origin's base. */
  commits: number;
  pushed: boolean;
  /** The draft pull request the command reported (its first URL, else its first line). */
  pullRequest: string | null;
  /** Why it was not pushed, or why no draft was opened (the branch stays pushed). */
  error: string | null;
}

function runCommand(argv: readonly string[], opts: { cwd: string; env: Record<string, string | undefined>; timeoutMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(argv[0]!, argv.slice(1), { cwd: opts.cwd, env: opts.env as NodeJS.ProcessEnv, timeout: opts.timeoutMs, maxBuffer: 1024 * 1024, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${argv[0]} failed: ${(stderr || err.message).trim().slice(0, 500)}`));
      else resolve(stdout);
    });
  });
}

/**
 * Publishes one writer's branch (write mode with origin, the project opted in): refuses when a commit
 * the branch has over origin's base carries AI attribution (nothing pushed); else pushes the branch to
 * origin under its own name through the hardened runner (no hooks, no repository-configured pack
 * commands), then runs the draft pull request command. Never merges anything. A failed command leaves
 * the branch pushed and says why.
 */
export async function publishWriterBranch(input: {
  root: string;
  base: WriteBase;
  branch: string;
  title: string;
  body: string;
  settings: PublishSettings;
  env: Record<string, string | undefined>;
}): Promise<PublishedBranch> {
  const { root, base, branch, env } = input;
  const remote = { cwd: root, env, timeoutMs: 120_000, ...(base.localOrigin ? { allowProtocols: ['file'] } : {}) };
  const result: PublishedBranch = { branch, commits: 0, pushed: false, pullRequest: null, error: null };
  // Full refs and a `--` before paths: neither name can be read as an option.
  const commits = (await git(['rev-list', `refs/remotes/${base.remoteRef!}..refs/heads/${branch}`, '--'], { cwd: root, env })).split('\n').filter(Boolean);
  result.commits = commits.length;
  if (!commits.length) return { ...result, error: `nothing to publish: ${branch} has no commit over ${base.remoteRef}` };
  for (const commit of commits) {
    const marked = aiAttributionIn(await git(['log', '-1', '--format=%B', commit, '--'], { cwd: root, env }));
    if (marked) return { ...result, error: `not pushed: commit ${commit.slice(0, 12)} carries AI attribution ("${marked}")` };
  }
  await git(['push', '--quiet', '--no-verify', 'origin', `refs/heads/${branch}:refs/heads/${branch}`], remote);
  result.pushed = true;
  const { command } = input.settings;
  if (!command) return { ...result, error: 'pushed; no draft pull request command is configured (KEELSON_SWARM_PR_COMMAND)' };
  const fill = (arg: string) => arg.replaceAll('{branch}', branch).replaceAll('{base}', base.branch).replaceAll('{title}', input.title).replaceAll('{body}', input.body);
  try {
    const out = await runCommand(command.map(fill), { cwd: root, env, timeoutMs: input.settings.timeoutMs ?? 60_000 });
    const lines = out.split('\n').map((l) => l.trim()).filter(Boolean);
    result.pullRequest = lines.map((l) => /https?:\/\/\S+/.exec(l)?.[0]).find(Boolean) ?? lines[0] ?? null;
    return result;
  } catch (err) {
    return { ...result, error: `pushed; the draft pull request command failed: ${(err as Error).message}` };
  }
}
