import { aiAttributionIn } from './attribution';
import { git } from './git';

/** A reviewed SHA that cannot land, and why (nothing was changed). */
export class MergeRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MergeRefused';
  }
}

export interface LandInput {
  /** The project's root checkout. */
  root: string;
  /** The base branch the root must have checked out. */
  base: string;
  /** The writer's branch. */
  branch: string;
  /** The SHA the lead reviewed: it must be the writer's branch head. */
  sha: string;
  agent: string;
  env: Record<string, string | undefined>;
}

/**
 * Lands a writer's reviewed SHA on the root's base branch (write mode without origin), after
 * checking: the root is clean and on the base; the SHA is the writer's branch head (what was
 * reviewed is what lands); no incoming commit carries AI attribution. A fast-forward when the base
 * has not moved, else a merge commit; a conflict aborts the merge and leaves the root as it was.
 * The caller holds the project's mutation lock.
 */
export async function landReviewedSha(input: LandInput): Promise<string> {
  const { root, base, branch, agent, env } = input;
  const run = (args: string[]) => git(args, { cwd: root, env });
  const dirty = (await run(['status', '--porcelain', '--untracked-files=normal'])).trim();
  if (dirty) throw new MergeRefused(`the root checkout is not clean (${dirty.split('\n').length} change(s)): nothing was merged`);
  const onBranch = (await run(['symbolic-ref', '--quiet', '--short', 'HEAD']).catch(() => '')).trim();
  if (onBranch !== base) throw new MergeRefused(`the root has ${onBranch ? `branch ${onBranch}` : 'a detached HEAD'} checked out, not the base ${base}: nothing was merged`);
  const sha = (await run(['rev-parse', '--verify', '--quiet', `${input.sha}^{commit}`]).catch(() => '')).trim();
  if (!sha) throw new MergeRefused(`${input.sha} is not a commit of this repository`);
  const head = (await run(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]).catch(() => '')).trim();
  if (head !== sha) throw new MergeRefused(`${input.sha} is not the head of ${agent}'s branch ${branch} (${head ? head.slice(0, 12) : 'missing'}): review its current head`);
  const incoming = (await run(['rev-list', `refs/heads/${base}..${sha}`])).split('\n').filter(Boolean);
  if (incoming.length === 0) return `${sha.slice(0, 12)} is already in ${base}: nothing to merge`;
  for (const commit of incoming) {
    const message = await run(['log', '-1', '--format=%B', commit]);
    const marked = aiAttributionIn(message);
    if (marked) throw new MergeRefused(`commit ${commit.slice(0, 12)} carries AI attribution ("${marked}"): remove it before it lands`);
  }
  const ff = await run(['merge-base', '--is-ancestor', `refs/heads/${base}`, sha]).then(
    () => true,
    () => false,
  );
  if (ff) {
    await run(['merge', '--quiet', '--ff-only', sha]);
    return `merged ${sha.slice(0, 12)} from ${agent} into ${base} (fast-forward, ${incoming.length} commit(s))`;
  }
  try {
    await run(['-c', 'user.name=Keelson swarm', '-c', 'user.email=swarm@keelson.invalid', 'merge', '--quiet', '--no-ff', '--no-edit', '-m', `Merge ${agent}'s ${sha.slice(0, 12)} into ${base}`, sha]);
  } catch {
    const conflicted = (await run(['diff', '--name-only', '--diff-filter=U']).catch(() => '')).split('\n').filter(Boolean);
    await run(['merge', '--abort']).catch(() => undefined);
    throw new MergeRefused(`merging ${sha.slice(0, 12)} conflicts${conflicted.length ? ` in ${conflicted.join(', ')}` : ''}: aborted, nothing changed; ${agent} repairs it in its worktree (rebase or merge ${base}) for another review`);
  }
  const merged = (await run(['rev-parse', 'HEAD'])).trim();
  return `merged ${sha.slice(0, 12)} from ${agent} into ${base} (merge commit ${merged.slice(0, 12)}, ${incoming.length} commit(s))`;
}
