import type { Project, Rib, RibActionResult, RibContext, RibDocsSource, RibSurfaceDescriptor, RibViewDescriptor, SnapshotManager, ToolContext, ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';
import {
  BADGE_KEY,
  PROJECTS_BOARD_KEY,
  PROJECTS_RIB_ID,
  badgeSchema,
  boardSchema,
  buildBadge,
  buildBoard,
  describeRow,
  projectDetailSchema,
  projectKey,
  projectSection,
  type Badge,
  type Board,
  type ProjectDetail,
} from './board';
import { gitVersion, GIT_TIMEOUT_MS, INSPECT_CONCURRENCY, inspectProject, mapLimited, recentCommits } from './inspect';

export { parseGitStatus, parseWorktrees, parseLog } from './gitStatus';
export { boardSchema, badgeSchema, projectDetailSchema, PROJECTS_BOARD_KEY, BADGE_KEY, projectKey } from './board';
export type { Board, Badge, ProjectDetail, ProjectRow } from './board';

/** Per-host state: a module is loaded once per process, while each host gives the rib its own context. */
interface State {
  lastBoard?: Board;
  lastBadge?: string;
  /** Detail keys with a composer in this host. */
  detailKeys: Set<string>;
}
const states = new WeakMap<RibContext, State>();
function stateOf(ctx: RibContext): State {
  let state = states.get(ctx);
  if (!state) states.set(ctx, (state = { detailKeys: new Set() }));
  return state;
}

function snapshots(ctx: RibContext): SnapshotManager {
  const manager = ctx.getSnapshotManager?.();
  if (!manager) throw new Error('this host offers no snapshot manager');
  return manager;
}

/** The projects the host reports, or none on a host without project seams. */
function projectsOf(ctx: RibContext): readonly Project[] {
  return ctx.getProjects?.() ?? [];
}

async function composeBoard(ctx: RibContext): Promise<Board> {
  const exec = ctx.getExec();
  const [git, rows] = await Promise.all([gitVersion(exec), mapLimited(projectsOf(ctx), INSPECT_CONCURRENCY, (p) => inspectProject(exec, p))]);
  const board = buildBoard(rows, git, new Date().toISOString());
  const state = stateOf(ctx);
  state.lastBoard = board;
  const badge = JSON.stringify(buildBadge(board));
  if (badge !== state.lastBadge) {
    state.lastBadge = badge;
    // The badge composer reads `lastBoard`, set above, so it agrees with this board whenever it runs.
    void ctx.getSnapshotManager?.().recompose(BADGE_KEY);
  }
  return board;
}

async function composeBadge(ctx: RibContext): Promise<Badge> {
  const state = stateOf(ctx);
  const board = state.lastBoard ?? (await snapshots(ctx).read<Board>(PROJECTS_BOARD_KEY))?.payload;
  return board ? buildBadge(board) : { count: 0 };
}

async function composeDetail(ctx: RibContext, projectId: string): Promise<ProjectDetail> {
  const project = projectsOf(ctx).find((p) => p.id === projectId);
  if (!project) throw new Error(`project ${projectId} is no longer registered`);
  const exec = ctx.getExec();
  const [row, commits] = await Promise.all([inspectProject(exec, project), recentCommits(exec, project.rootPath, 10)]);
  const section = projectSection(row);
  return {
    title: project.name,
    composedAt: new Date().toISOString(),
    project: row,
    commits,
    sections: [
      section,
      {
        id: 'changes',
        title: 'Changed files',
        tone: row.dirty.total > 0 ? 'warn' : 'ok',
        fields: row.dirty.files.map((f) => ({ label: f.status, value: f.from ? `${f.from} → ${f.path}` : f.path })),
        actions: [],
      },
      {
        id: 'commits',
        title: 'Recent commits',
        tone: 'neutral',
        fields: commits.map((c) => ({ label: c.sha.slice(0, 12), value: `${c.subject} (${c.author}, ${c.at})` })),
        actions: [],
      },
    ],
  };
}

const openProjectPayload = z.strictObject({ projectId: z.string().min(1).optional(), name: z.string().min(1).optional() });

/** Finds a project by id or by name. */
function findProject(ctx: RibContext, ref: string): Project | undefined {
  return projectsOf(ctx).find((p) => p.id === ref || p.name === ref);
}

async function openProject(ctx: RibContext, payload: unknown): Promise<RibActionResult> {
  const parsed = openProjectPayload.safeParse(payload ?? {});
  if (!parsed.success || (parsed.data.projectId === undefined) === (parsed.data.name === undefined)) {
    return { ok: false, error: "open-project: the payload is { projectId } or { name }" };
  }
  const ref = parsed.data.projectId ?? parsed.data.name!;
  const project = findProject(ctx, ref);
  if (!project) return { ok: false, error: `open-project: no project ${JSON.stringify(ref)}` };
  const key = projectKey(project.id);
  const state = stateOf(ctx);
  const manager = snapshots(ctx);
  if (!state.detailKeys.has(key)) {
    manager.register(key, () => composeDetail(ctx, project.id), { validate: (data) => projectDetailSchema.parse(data) });
    state.detailKeys.add(key);
  }
  // The host resolves a key's canvas kind by exact match: a per-project document needs its own view.
  if (!views.some((v) => v.key === key)) {
    views.push({ key, canvasKind: 'view', title: project.name });
    ctx.invalidateManifest?.();
  }
  const frame = await manager.recompose(key);
  if (!frame) return { ok: false, error: `open-project: could not inspect ${project.name}` };
  return { ok: true, data: { effect: 'open-canvas', key, title: project.name, placement: 'side' } };
}

/** The board's views: the board itself, plus a detail view per project opened (appended at run time). */
const views: RibViewDescriptor[] = [{ key: PROJECTS_BOARD_KEY, canvasKind: 'view', title: 'Projects' }];

const surfaces: RibSurfaceDescriptor[] = [
  {
    id: 'projects',
    title: 'Projects',
    heading: 'Projects',
    subtitle: 'Every registered project: branch, uncommitted changes, upstream, worktree leases and the mutation lock',
    badgeKey: BADGE_KEY,
    layout: {
      rows: [
        {
          columns: [
            {
              key: PROJECTS_BOARD_KEY,
              title: 'Board',
              cadenceMs: 60_000,
              live: true,
              glyph: { char: '⎇', tone: 'brand' },
              headActions: [{ label: 'Refresh', action: 'refresh' }],
            },
          ],
        },
      ],
    },
  },
];

function toolText(ctx: ToolContext, content: string, isError = false): void {
  ctx.emit({ type: 'tool_result', toolUseId: '', content, ...(isError ? { isError } : {}) });
}

function tools(ribCtx: RibContext): ToolDefinition[] {
  const list: ToolDefinition<Record<string, never>> = {
    name: 'projects_list',
    description: 'List every registered project: name, id, root path, and (from the last board) its branch and changes.',
    inputSchema: z.strictObject({}),
    execute(_input, ctx) {
      const projects = projectsOf(ribCtx);
      if (projects.length === 0) return toolText(ctx, 'No projects are registered.');
      const rows = new Map((stateOf(ribCtx).lastBoard?.projects ?? []).map((r) => [r.id, r]));
      toolText(
        ctx,
        projects
          .map((p) => {
            const row = rows.get(p.id);
            return `- ${p.name} (${p.id}) at ${p.rootPath}${row ? `: ${describeRow(row)}` : ''}`;
          })
          .join('\n'),
      );
    },
  };
  const status: ToolDefinition<{ project: string }> = {
    name: 'projects_status',
    description: "A project's live git state: branch, upstream ahead/behind, changed files, worktree leases and the mutation-lock holder.",
    inputSchema: z.strictObject({ project: z.string().min(1).describe('the project name or id') }),
    async execute(input, ctx) {
      const project = findProject(ribCtx, input.project);
      if (!project) return toolText(ctx, `No project named or identified ${JSON.stringify(input.project)}.`, true);
      if (ctx.abortSignal.aborted) return toolText(ctx, 'cancelled', true);
      const row = await inspectProject(ribCtx.getExec(), project, ctx.abortSignal);
      if (ctx.abortSignal.aborted) return toolText(ctx, 'cancelled', true);
      const lines = [`${project.name} (${project.rootPath}): ${describeRow(row)}`];
      for (const f of row.dirty.files) lines.push(`  ${f.status} ${f.from ? `${f.from} -> ` : ''}${f.path}`);
      if (row.dirty.truncated) lines.push(`  … ${row.dirty.total - row.dirty.files.length} more`);
      if (row.leases) lines.push(`leases: ${row.leases.length === 0 ? 'none' : row.leases.map((l) => `${l.branch} at ${l.path}${l.purpose ? ` (${l.purpose})` : ''}`).join('; ')}`);
      if (row.lockReported) lines.push(`mutation lock: ${row.lock ? `${row.lock.holder} for '${row.lock.purpose}'` : 'free'}`);
      if (row.lastCommit) lines.push(`last commit: ${row.lastCommit.sha.slice(0, 12)} ${row.lastCommit.subject}`);
      toolText(ctx, lines.join('\n'), row.state === 'error' || row.state === 'missing');
    },
  };
  return [list, status] as ToolDefinition[];
}

const docs: RibDocsSource[] = [
  {
    title: 'Projects board',
    summary: 'The live board of every registered project: what it shows, its actions and its projects_* tools.',
    content: [
      '# The board',
      'The board (`rib:projects`) lists every registered project with what `git status --porcelain=v2 --branch` reports: the branch (or detached HEAD), the upstream and how far HEAD is ahead of or behind it, and the changed files (staged, unstaged, untracked, conflicted). From the projects domain it adds the live worktree leases (each checked against `git worktree list`) and the mutation-lock holder.',
      'The surface badge counts projects that need a look: uncommitted changes, behind their upstream, or unreadable.',
      '# Actions',
      '- `refresh` recomposes the board now (the surface also refreshes it every minute).',
      '- `open-project` with `{ projectId }` or `{ name }` opens a side inspector with the changed files and the last ten commits.',
      'Both are board verbs: an html canvas cannot dispatch them.',
      '# Tools',
      '- `projects_list`: every project with its id and root, and its state from the last board.',
      "- `projects_status` with `{ project }` (name or id): that project's live git state, leases and lock.",
      '# Reading the state',
      'A project is `missing` when its folder is gone, `not-git` when it is a plain folder, and `error` when git failed (the message says why). `no upstream` means the branch tracks nothing, so ahead/behind is unknown.',
    ].join('\n\n'),
  },
];

const rib: Rib = {
  id: PROJECTS_RIB_ID,
  displayName: 'Projects',
  views,
  surfaces,

  registerTools(ctx) {
    // The board is registered here rather than as composeBundle so it carries its validator: a board
    // that does not parse is dropped and the previous version kept. Lazy: nothing composes at boot.
    const manager = snapshots(ctx);
    manager.register(PROJECTS_BOARD_KEY, () => composeBoard(ctx), { validate: (data) => boardSchema.parse(data) });
    manager.register(BADGE_KEY, () => composeBadge(ctx), { validate: (data) => badgeSchema.parse(data) });
    return tools(ctx);
  },

  contributeDocs: () => docs,

  async onAction(action, ctx): Promise<RibActionResult> {
    // Every verb here is a board verb: this rib renders no html canvas, so a frame has nothing to ask.
    if (action.origin === 'canvas-html') {
      return { ok: false, error: `'${action.type}' is a board action; rib '${PROJECTS_RIB_ID}' accepts no actions from an html canvas` };
    }
    if (action.type === 'refresh') {
      const frame = await snapshots(ctx).recompose<Board>(PROJECTS_RIB_ID);
      return frame
        ? { ok: true, data: { key: frame.key, version: frame.version, projects: frame.payload.totals.projects } }
        : { ok: false, error: 'the board could not be composed; the previous version stands' };
    }
    if (action.type === 'open-project') return openProject(ctx, action.payload);
    return { ok: false, error: `unknown action '${action.type}' (this rib handles refresh and open-project)` };
  },

  async authStatus(ctx) {
    const exec = ctx.getExec();
    const git = await gitVersion(exec);
    if (!git.available) return { authenticated: false, statusMessage: 'git is not installed or not on PATH' };
    const get = async (key: string) => {
      const res = await exec.runText('git', ['config', '--get', key], { timeoutMs: GIT_TIMEOUT_MS });
      return res.ok ? res.data.trim() : '';
    };
    const [name, email] = await Promise.all([get('user.name'), get('user.email')]);
    const missing = [!name && 'user.name', !email && 'user.email'].filter(Boolean);
    if (missing.length > 0) {
      return {
        authenticated: false,
        statusMessage: `git ${git.version}: no identity (${missing.join(', ')}); set it with git config --global ${missing[0]} …`,
      };
    }
    return { authenticated: true, statusMessage: `git ${git.version} · ${name} <${email}>` };
  },
};

export default rib;
