import { z } from 'zod';

/** The rib's id and the keys it publishes under. */
export const PROJECTS_RIB_ID = 'projects';
export const PROJECTS_BOARD_KEY = 'rib:projects';
export const BADGE_KEY = 'rib:projects:badge';
/** The detail document `open-project` opens, one key per project. */
export function projectKey(projectId: string): string {
  return `rib:projects:project:${projectId}`;
}

const tone = z.enum(['ok', 'warn', 'error', 'neutral', 'info', 'caution', 'brand', 'accent']);

const changedFile = z.strictObject({ path: z.string(), status: z.string(), from: z.string().optional() });

const lease = z.strictObject({
  id: z.string(),
  branch: z.string(),
  path: z.string(),
  purpose: z.string().nullable(),
  acquiredAt: z.string(),
  /** Whether `git worktree list` still shows the lease's checkout. */
  checkedOut: z.boolean(),
});

/** One project's row on the board: what git says, plus the leases and lock the projects domain reports. */
export const projectRowSchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  rootPath: z.string(),
  /** `ok` a readable git checkout; `not-git` a plain folder; `missing` no folder; `error` git failed. */
  state: z.enum(['ok', 'not-git', 'missing', 'error']),
  branch: z.string().nullable(),
  detached: z.boolean(),
  head: z.string().nullable(),
  unborn: z.boolean(),
  upstream: z.string().nullable(),
  ahead: z.number().int().nonnegative().nullable(),
  behind: z.number().int().nonnegative().nullable(),
  dirty: z.strictObject({
    total: z.number().int().nonnegative(),
    staged: z.number().int().nonnegative(),
    unstaged: z.number().int().nonnegative(),
    untracked: z.number().int().nonnegative(),
    conflicted: z.number().int().nonnegative(),
    /** The first changed paths (see `truncated`). */
    files: z.array(changedFile),
    truncated: z.boolean(),
  }),
  lastCommit: z.strictObject({ sha: z.string(), subject: z.string(), author: z.string(), at: z.string() }).nullable(),
  /** Worktrees git lists, the main checkout included. */
  worktrees: z.number().int().nonnegative(),
  /** Live leases; null when the host does not report them. */
  leases: z.array(lease).nullable(),
  /** The mutation-lock holder; null when free (or not reported: see `lockReported`). */
  lock: z.strictObject({ holder: z.string(), purpose: z.string(), acquiredAt: z.string() }).nullable(),
  lockReported: z.boolean(),
  error: z.string().optional(),
});
export type ProjectRow = z.infer<typeof projectRowSchema>;

const field = z.strictObject({ label: z.string(), value: z.string(), tone: tone.optional() });
/** A board action on a card (the shape `ribBoardActionSchema` accepts): dispatched to onAction with origin `board`. */
const boardAction = z.strictObject({ label: z.string(), action: z.string(), payload: z.unknown().optional() });

/** A card of the structured view document: one per project. */
const sectionSchema = z.strictObject({
  id: z.string(),
  title: z.string(),
  subtitle: z.string().optional(),
  tone,
  fields: z.array(field),
  actions: z.array(boardAction),
});

/** The board published under `rib:projects` (a `view` canvas document). */
export const boardSchema = z.strictObject({
  title: z.string(),
  composedAt: z.string(),
  git: z.strictObject({ available: z.boolean(), version: z.string().nullable() }),
  totals: z.strictObject({
    projects: z.number().int().nonnegative(),
    dirty: z.number().int().nonnegative(),
    leases: z.number().int().nonnegative(),
    locked: z.number().int().nonnegative(),
  }),
  projects: z.array(projectRowSchema),
  sections: z.array(sectionSchema),
});
export type Board = z.infer<typeof boardSchema>;

/** The tab pip under `rib:projects:badge`. */
export const badgeSchema = z.strictObject({ count: z.number().int().nonnegative(), title: z.string().optional() });
export type Badge = z.infer<typeof badgeSchema>;

/** The detail document `open-project` opens under `rib:projects:project:<id>`. */
export const projectDetailSchema = z.strictObject({
  title: z.string(),
  composedAt: z.string(),
  project: projectRowSchema,
  commits: z.array(z.strictObject({ sha: z.string(), subject: z.string(), author: z.string(), at: z.string() })),
  sections: z.array(sectionSchema),
});
export type ProjectDetail = z.infer<typeof projectDetailSchema>;

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The one-line git summary of a row: `main ↑1 ↓0 · 3 changed`. */
export function describeRow(row: ProjectRow): string {
  if (row.state === 'missing') return 'folder missing';
  if (row.state === 'not-git') return 'not a git repository';
  if (row.state === 'error') return `git failed: ${row.error ?? 'unknown error'}`;
  const where = row.branch ?? `detached at ${row.head?.slice(0, 12) ?? '?'}`;
  const sync = row.ahead === null ? 'no upstream' : `↑${row.ahead} ↓${row.behind}`;
  const changes = row.dirty.total === 0 ? 'clean' : plural(row.dirty.total, 'changed file');
  return `${where}${row.unborn ? ' (no commits yet)' : ''} · ${sync} · ${changes}`;
}

function rowTone(row: ProjectRow): Board['sections'][number]['tone'] {
  if (row.state === 'error' || row.state === 'missing' || row.dirty.conflicted > 0) return 'error';
  if (row.lock) return 'caution';
  if (row.dirty.total > 0 || (row.behind ?? 0) > 0) return 'warn';
  if (row.state === 'not-git') return 'neutral';
  return 'ok';
}

/** The card of one project, with its board actions. */
export function projectSection(row: ProjectRow): Board['sections'][number] {
  const fields: Board['sections'][number]['fields'] = [
    { label: 'Branch', value: row.branch ?? (row.head ? `detached ${row.head.slice(0, 12)}` : '—') },
    { label: 'Changes', value: row.dirty.total === 0 ? 'clean' : `${row.dirty.total} (${row.dirty.staged} staged, ${row.dirty.unstaged} unstaged, ${row.dirty.untracked} untracked)`, tone: row.dirty.total > 0 ? 'warn' : 'ok' },
    { label: 'Upstream', value: row.upstream ? `${row.upstream} ↑${row.ahead} ↓${row.behind}` : 'none' },
    { label: 'Leases', value: row.leases === null ? 'not reported' : row.leases.length === 0 ? 'none' : row.leases.map((l) => l.branch).join(', ') },
    { label: 'Lock', value: row.lock ? `${row.lock.holder}: ${row.lock.purpose}` : row.lockReported ? 'free' : 'not reported', ...(row.lock ? { tone: 'caution' as const } : {}) },
  ];
  if (row.lastCommit) fields.push({ label: 'Last commit', value: `${row.lastCommit.sha.slice(0, 12)} ${row.lastCommit.subject}` });
  return {
    id: row.id,
    title: row.name,
    subtitle: describeRow(row),
    tone: rowTone(row),
    fields,
    actions: [{ label: 'Open', action: 'open-project', payload: { projectId: row.id } }],
  };
}

/** Assembles the board from the rows (already in the projects' order). */
export function buildBoard(rows: ProjectRow[], git: Board['git'], composedAt: string): Board {
  return {
    title: 'Projects',
    composedAt,
    git,
    totals: {
      projects: rows.length,
      dirty: rows.filter((r) => r.dirty.total > 0).length,
      leases: rows.reduce((n, r) => n + (r.leases?.length ?? 0), 0),
      locked: rows.filter((r) => r.lock !== null).length,
    },
    projects: rows,
    sections: rows.map(projectSection),
  };
}

/** The tab pip: projects that need a look (uncommitted changes, behind upstream, conflicts, git failures). */
export function buildBadge(board: Board): Badge {
  const attention = board.projects.filter((r) => r.dirty.total > 0 || (r.behind ?? 0) > 0 || r.state === 'error' || r.state === 'missing');
  return attention.length === 0
    ? { count: 0 }
    : { count: attention.length, title: `${plural(attention.length, 'project')} need a look: ${attention.map((r) => r.name).join(', ')}` };
}
