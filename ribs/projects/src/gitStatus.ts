/** One changed path as `git status` reports it. */
export interface ChangedFile {
  path: string;
  /** Two letters, index then worktree (`.` = unchanged), `??` for untracked, `UU`-style for conflicts. */
  status: string;
  /** For renames and copies: the path it came from. */
  from?: string;
}

/** What `git status --porcelain=v2 --branch -z` says about a checkout. */
export interface GitStatus {
  /** The branch checked out, or null when HEAD is detached. */
  branch: string | null;
  /** The HEAD commit, or null for an unborn branch. */
  head: string | null;
  upstream: string | null;
  /** Commits ahead of / behind the upstream; null without an upstream. */
  ahead: number | null;
  behind: number | null;
  staged: number;
  unstaged: number;
  untracked: number;
  conflicted: number;
  files: ChangedFile[];
}

/** The arguments that produce what `parseGitStatus` reads. */
export const GIT_STATUS_ARGS = ['status', '--porcelain=v2', '--branch', '-z', '--untracked-files=all'] as const;

/**
 * Parses `git status --porcelain=v2 --branch -z`: the `# branch.*` headers, then one record per
 * changed path (`1` ordinary, `2` renamed or copied — followed by its origin path as its own field —
 * `u` unmerged, `?` untracked; `!` ignored entries are skipped).
 */
export function parseGitStatus(output: string): GitStatus {
  const status: GitStatus = {
    branch: null,
    head: null,
    upstream: null,
    ahead: null,
    behind: null,
    staged: 0,
    unstaged: 0,
    untracked: 0,
    conflicted: 0,
    files: [],
  };
  const fields = output.split('\0');
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i]!;
    if (field === '') continue;
    if (field.startsWith('# ')) {
      const [name, ...rest] = field.slice(2).split(' ');
      const value = rest.join(' ');
      if (name === 'branch.oid') status.head = value === '(initial)' ? null : value;
      else if (name === 'branch.head') status.branch = value === '(detached)' ? null : value;
      else if (name === 'branch.upstream') status.upstream = value;
      else if (name === 'branch.ab') {
        const match = /^\+(\d+) -(\d+)$/.exec(value);
        if (match) {
          status.ahead = Number(match[1]);
          status.behind = Number(match[2]);
        }
      }
      continue;
    }
    const kind = field[0];
    if (kind === '?') {
      status.untracked += 1;
      status.files.push({ path: field.slice(2), status: '??' });
    } else if (kind === '1' || kind === '2') {
      // `1 XY sub mH mI mW hH hI path`; `2` adds a score before the path, and the origin follows.
      const parts = field.split(' ');
      const xy = parts[1] ?? '..';
      const path = parts.slice(kind === '1' ? 8 : 9).join(' ');
      const file: ChangedFile = { path, status: xy };
      if (kind === '2') {
        file.from = fields[i + 1] ?? '';
        i += 1;
      }
      if (xy[0] !== '.') status.staged += 1;
      if (xy[1] !== '.') status.unstaged += 1;
      status.files.push(file);
    } else if (kind === 'u') {
      const parts = field.split(' ');
      status.conflicted += 1;
      status.files.push({ path: parts.slice(10).join(' '), status: parts[1] ?? 'UU' });
    }
  }
  return status;
}

/** One worktree of a repository. */
export interface GitWorktree {
  path: string;
  /** The branch it has checked out (without `refs/heads/`), or null when detached or bare. */
  branch: string | null;
  head: string | null;
  /** Git's own note that the worktree's folder is gone. */
  prunable: boolean;
}

/** The arguments that produce what `parseWorktrees` reads. */
export const GIT_WORKTREE_ARGS = ['worktree', 'list', '--porcelain', '-z'] as const;

/** Parses `git worktree list --porcelain -z`: records of `key value` fields, each record ended by an empty field. */
export function parseWorktrees(output: string): GitWorktree[] {
  const worktrees: GitWorktree[] = [];
  let current: GitWorktree | undefined;
  for (const field of output.split('\0')) {
    if (field === '') {
      if (current) worktrees.push(current);
      current = undefined;
      continue;
    }
    const space = field.indexOf(' ');
    const key = space === -1 ? field : field.slice(0, space);
    const value = space === -1 ? '' : field.slice(space + 1);
    if (key === 'worktree') current = { path: value, branch: null, head: null, prunable: false };
    else if (!current) continue;
    else if (key === 'HEAD') current.head = value;
    else if (key === 'branch') current.branch = value.replace(/^refs\/heads\//, '');
    else if (key === 'prunable') current.prunable = true;
  }
  if (current) worktrees.push(current);
  return worktrees;
}

/** One commit of `git log`. */
export interface GitCommit {
  sha: string;
  subject: string;
  author: string;
  /** ISO-8601 committer date. */
  at: string;
}

const UNIT = '\x1f';

/** The arguments of `git log` that `parseLog` reads (the newest `count` commits of HEAD). */
export function gitLogArgs(count: number): string[] {
  return ['log', `-n${count}`, '-z', `--format=%H${UNIT}%s${UNIT}%an${UNIT}%cI`];
}

/** Parses `gitLogArgs` output: NUL-separated commits of unit-separated fields. */
export function parseLog(output: string): GitCommit[] {
  return output
    .split('\0')
    .map((record) => record.replace(/^\n/, ''))
    .filter((record) => record.length > 0)
    .map((record) => {
      const [sha = '', subject = '', author = '', at = ''] = record.split(UNIT);
      return { sha, subject, author, at };
    });
}
