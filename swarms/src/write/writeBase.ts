import { git, GitFailure, isLocalRemote } from './git';

/** Where writers branch from and what they land on. */
export interface WriteBase {
  /** The project has an `origin` remote: writers are cut from its fetched default branch. */
  origin: boolean;
  /** The base branch: the root's symbolic HEAD branch (no origin), or origin's default branch. */
  branch: string;
  /** With origin: the remote-tracking ref writers are cut from (`origin/<branch>`). */
  remoteRef?: string;
  /** With an origin on this machine (a path): fetched over the file transport. */
  localOrigin?: boolean;
}

/**
 * Decides the write base of a project's root, once per swarm: with an `origin` remote, fetch it and
 * take its default branch; without, the root's symbolic HEAD branch (its tip moves as merges land,
 * so later writers inherit them). A detached or unborn HEAD cannot host writers.
 */
export async function detectWriteBase(root: string, env: Record<string, string | undefined>): Promise<WriteBase> {
  const originUrl = await git(['remote', 'get-url', 'origin'], { cwd: root, env }).then(
    (out) => out.trim(),
    () => undefined,
  );
  if (originUrl) {
    const localOrigin = isLocalRemote(originUrl);
    const remote = { cwd: root, env, timeoutMs: 120_000, ...(localOrigin ? { allowProtocols: ['file'] } : {}) };
    await git(['fetch', '--quiet', 'origin'], remote);
    const symref = await git(['ls-remote', '--symref', 'origin', 'HEAD'], remote);
    const m = /^ref: refs\/heads\/(\S+)\s+HEAD/m.exec(symref);
    if (!m) throw new Error('origin has no default branch (its HEAD names none)');
    const branch = await validBranchName(m[1]!, root, env);
    return { origin: true, branch, remoteRef: `origin/${branch}`, ...(localOrigin ? { localOrigin } : {}) };
  }
  let branch: string;
  try {
    branch = (await git(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: root, env })).trim();
  } catch (err) {
    throw new Error(`the project's HEAD is detached (${err instanceof GitFailure ? err.stderr.trim() || 'not a symbolic ref' : (err as Error).message}); write mode needs a branch`);
  }
  await git(['rev-parse', '--verify', 'HEAD^{commit}'], { cwd: root, env }).catch(() => {
    throw new Error(`branch ${branch} has no commit yet; write mode needs one`);
  });
  return { origin: false, branch };
}

/**
 * A branch name a remote (or a repository) announced, accepted only when git itself calls it a valid
 * branch name and it cannot be read as an option (`--upload-pack=…` is a valid ref component).
 */
export async function validBranchName(name: string, cwd: string, env: Record<string, string | undefined>): Promise<string> {
  const valid = !name.startsWith('-') && (await git(['check-ref-format', `refs/heads/${name}`], { cwd, env }).then(() => true, () => false));
  if (!valid) throw new Error(`origin's default branch ${JSON.stringify(name)} is not a branch name write mode accepts`);
  return name;
}

/** With origin, a writer's fresh worktree is moved to the fetched default branch's tip. */
export async function cutWriterWorktree(path: string, base: WriteBase, env: Record<string, string | undefined>): Promise<string> {
  if (base.origin) {
    // A full refspec: the name can never be taken for an option.
    await git(['fetch', '--quiet', 'origin', `refs/heads/${base.branch}:refs/remotes/origin/${base.branch}`], { cwd: path, env, timeoutMs: 120_000, ...(base.localOrigin ? { allowProtocols: ['file'] } : {}) });
    await git(['reset', '--quiet', '--hard', `refs/remotes/${base.remoteRef!}`, '--'], { cwd: path, env });
  }
  return (await git(['rev-parse', 'HEAD'], { cwd: path, env })).trim();
}

/**
 * Commits everything a writer's turn changed in its worktree (the agent itself cannot write git
 * metadata: the sandbox keeps `.git` read-only), authored as the writer.
 * @returns the new commit, or undefined when nothing changed
 */
export async function commitWriterTurn(path: string, opts: { message: string; author: string; email: string }, env: Record<string, string | undefined>): Promise<{ sha: string; files: number } | undefined> {
  await git(['add', '--all'], { cwd: path, env });
  const staged = (await git(['diff', '--cached', '--name-only'], { cwd: path, env })).split('\n').filter(Boolean);
  if (staged.length === 0) return undefined;
  await git(['-c', `user.name=${opts.author}`, '-c', `user.email=${opts.email}`, 'commit', '--quiet', '--no-verify', '-m', opts.message], { cwd: path, env });
  return { sha: (await git(['rev-parse', 'HEAD'], { cwd: path, env })).trim(), files: staged.length };
}

/** Deletes a writer's branch only when the base holds its commits (`git branch -d` refuses otherwise). */
export async function pruneWriterBranch(root: string, branch: string, base: string, env: Record<string, string | undefined>): Promise<'deleted' | 'kept'> {
  const held = await git(['merge-base', '--is-ancestor', `refs/heads/${branch}`, `refs/heads/${base}`], { cwd: root, env }).then(
    () => true,
    () => false,
  );
  if (!held) return 'kept';
  await git(['branch', '--quiet', '-d', branch], { cwd: root, env }).catch(() => undefined);
  return 'deleted';
}
