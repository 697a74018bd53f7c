import { stat } from 'node:fs/promises';
import type { Project, RibExec } from '@keelson/ribs-contract';
import type { Board, ProjectRow } from './board';
import { GIT_STATUS_ARGS, GIT_WORKTREE_ARGS, gitLogArgs, parseGitStatus, parseLog, parseWorktrees, type GitCommit } from './gitStatus';

/** How many changed paths a row lists. */
export const MAX_LISTED_FILES = 25;
/** Bound of one git command. */
export const GIT_TIMEOUT_MS = 15_000;
/** Projects inspected at once. */
export const INSPECT_CONCURRENCY = 4;

async function folderState(root: string): Promise<'dir' | 'missing' | 'other'> {
  try {
    return (await stat(root)).isDirectory() ? 'dir' : 'other';
  } catch {
    return 'missing';
  }
}

function firstLine(text: string | undefined): string {
  return (text ?? '').trim().split('\n')[0]?.slice(0, 300) ?? '';
}

function emptyRow(project: Project, state: ProjectRow['state'], error?: string): ProjectRow {
  return {
    id: project.id,
    name: project.name,
    rootPath: project.rootPath,
    state,
    branch: null,
    detached: false,
    head: null,
    unborn: false,
    upstream: null,
    ahead: null,
    behind: null,
    dirty: { total: 0, staged: 0, unstaged: 0, untracked: 0, conflicted: 0, files: [], truncated: false },
    lastCommit: null,
    worktrees: 0,
    leases: project.workspaces ? project.workspaces.map((l) => ({ ...l, checkedOut: false })) : null,
    lock: project.mutationLock ? { holder: project.mutationLock.holder, purpose: project.mutationLock.purpose, acquiredAt: project.mutationLock.acquiredAt } : null,
    lockReported: project.mutationLock !== undefined,
    ...(error ? { error } : {}),
  };
}

/**
 * One project's row from real git output: `git status --porcelain=v2 --branch` (branch, upstream,
 * ahead/behind, changed paths), `git worktree list` (which leases are checked out) and the last
 * commit; leases and the lock holder come from the project record. Never throws: a missing folder,
 * a plain folder or a failing git reads as the row's `state`. The host's exec runs these git commands
 * hardened, so the project's own config (fsmonitor, hooks, filter drivers) runs nothing.
 */
export async function inspectProject(exec: RibExec, project: Project, signal?: AbortSignal): Promise<ProjectRow> {
  const folder = await folderState(project.rootPath);
  if (folder === 'missing') return emptyRow(project, 'missing');
  if (folder === 'other') return emptyRow(project, 'error', `${project.rootPath} is not a directory`);
  const git = (args: readonly string[]) => exec.runText('git', ['-C', project.rootPath, ...args], { timeoutMs: GIT_TIMEOUT_MS, signal });

  const status = await git(GIT_STATUS_ARGS);
  if (!status.ok) {
    const why = firstLine(status.stderr) || status.error;
    return /not a git repository/i.test(why) ? emptyRow(project, 'not-git') : emptyRow(project, 'error', why);
  }
  const parsed = parseGitStatus(status.data);
  const [worktrees, log] = await Promise.all([git(GIT_WORKTREE_ARGS), parsed.head ? git(gitLogArgs(1)) : Promise.resolve(undefined)]);
  const listed = worktrees.ok ? parseWorktrees(worktrees.data) : [];
  const lastCommit: GitCommit | undefined = log?.ok ? parseLog(log.data)[0] : undefined;
  const row = emptyRow(project, 'ok');
  const checkedOut = new Set(listed.filter((w) => !w.prunable).map((w) => w.path));
  return {
    ...row,
    branch: parsed.branch,
    detached: parsed.branch === null,
    head: parsed.head,
    unborn: parsed.head === null,
    upstream: parsed.upstream,
    ahead: parsed.ahead,
    behind: parsed.behind,
    dirty: {
      total: parsed.files.length,
      staged: parsed.staged,
      unstaged: parsed.unstaged,
      untracked: parsed.untracked,
      conflicted: parsed.conflicted,
      files: parsed.files.slice(0, MAX_LISTED_FILES),
      truncated: parsed.files.length > MAX_LISTED_FILES,
    },
    lastCommit: lastCommit ?? null,
    worktrees: listed.length,
    leases: row.leases ? row.leases.map((l) => ({ ...l, checkedOut: checkedOut.has(l.path) })) : null,
  };
}

/** Runs `run` over `items` with at most `limit` in flight, keeping the input order. */
export async function mapLimited<T, R>(items: readonly T[], limit: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const at = next++;
      out[at] = await run(items[at]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** `git --version`, or null when git cannot run. */
export async function gitVersion(exec: RibExec): Promise<Board['git']> {
  const res = await exec.runText('git', ['--version'], { timeoutMs: GIT_TIMEOUT_MS });
  return res.ok ? { available: true, version: res.data.trim().replace(/^git version /, '') } : { available: false, version: null };
}

/** The newest commits of a project's HEAD (empty for an unborn or non-git folder). */
export async function recentCommits(exec: RibExec, rootPath: string, count: number): Promise<GitCommit[]> {
  const res = await exec.runText('git', ['-C', rootPath, ...gitLogArgs(count)], { timeoutMs: GIT_TIMEOUT_MS });
  return res.ok ? parseLog(res.data) : [];
}
