import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gql, gqlData, subscribe } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';

// The ribs acceptance, spoken to only through the gateway (HTTP and graphql-ws).

const FRAMES = `subscription Frames($keys: [String!]!, $after: String) {
  snapshotFrames(keys: $keys, after: $after) { cursor key version ribId at payload }
}`;
type Frame = { cursor: string; key: string; version: number; ribId: string; payload: Board };
type FrameData = { snapshotFrames: Frame };
type Board = {
  totals: { projects: number; dirty: number; leases: number; locked: number };
  projects: {
    name: string;
    state: string;
    branch: string | null;
    head: string | null;
    dirty: { total: number; untracked: number; files: { path: string; status: string }[] };
    lastCommit: { subject: string } | null;
    leases: { id: string; branch: string; purpose: string | null; checkedOut: boolean }[] | null;
    lock: { holder: string; purpose: string } | null;
  }[];
};

/** Retries `check` until it stops throwing (the projects cache follows the projects stream). */
async function eventually<T>(check: () => Promise<T>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('ribs through the gateway', () => {
  let mesh: TestMesh;
  let alpha: { id: string; rootPath: string };

  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: mesh.rawEnv, encoding: 'utf8' }).trim();
  const refresh = () => gqlData<{ ribAction: { ok: boolean; data: { version: number }; error: string | null } }>(mesh.gatewayUrl, 'mutation { ribAction(ribId: "projects", type: "refresh") { ok data error } }');

  beforeAll(async () => {
    mesh = await startTestMesh();
  });
  afterAll(async () => {
    await mesh?.teardown();
  });

  it('serves ribManifest with the built-in ribs: views, surfaces, auth, tools, agents and commands', async () => {
    const { ribManifest } = await gqlData<{
      ribManifest: {
        crossRibGrants: unknown;
        ribs: {
          id: string;
          registered: boolean;
          hasOnAction: boolean;
          acceptsIngest: boolean;
          views: { key: string; canvasKind: string }[];
          surfaces: { id: string; badgeKey: string | null; regions: { key: string; cadenceMs: number | null }[] }[];
          auth: { authenticated: boolean; statusMessage: string | null } | null;
          tools: { name: string; family: string }[];
          agents: { slug: string }[];
          commands: { name: string; completes: boolean }[];
        }[];
      };
    }>(
      mesh.gatewayUrl,
      `{ ribManifest { crossRibGrants ribs { id registered hasOnAction acceptsIngest views { key canvasKind } surfaces { id badgeKey regions { key cadenceMs } }
         auth { authenticated statusMessage } tools { name family } agents { slug } commands { name completes } } } }`,
    );
    expect(ribManifest.crossRibGrants).toEqual({});
    const byId = Object.fromEntries(ribManifest.ribs.map((r) => [r.id, r]));
    expect(byId.projects).toMatchObject({
      registered: true,
      hasOnAction: true,
      acceptsIngest: false,
      views: [{ key: 'rib:projects', canvasKind: 'VIEW' }],
      surfaces: [{ id: 'projects', badgeKey: 'rib:projects:badge', regions: [{ key: 'rib:projects', cadenceMs: 60000 }] }],
      auth: { authenticated: true, statusMessage: expect.stringContaining('Keelson Test <test@keelson.invalid>') },
      tools: [
        { name: 'projects_list', family: 'projects' },
        { name: 'projects_status', family: 'projects' },
      ],
    });
    expect(byId.notes).toMatchObject({
      acceptsIngest: true,
      views: [
        { key: 'rib:notes', canvasKind: 'HTML' },
        { key: 'rib:notes:list', canvasKind: 'MARKDOWN' },
      ],
      surfaces: [{ id: 'notes', regions: [{ key: 'rib:notes:list' }, { key: 'rib:notes' }] }],
      auth: { authenticated: false, statusMessage: expect.stringMatching(/npm run credential -- set notes signing-key/) },
      agents: [{ slug: 'scribe' }, { slug: 'critic' }],
      commands: [
        { name: 'notes', completes: true },
        { name: 'notes-agent', completes: true },
      ],
    });
  });

  it("shows a real project's real git state on the board: branch, last commit, dirty files, leases and the lock", async () => {
    ({ createProject: alpha } = await gqlData<{ createProject: { id: string; rootPath: string } }>(
      mesh.gatewayUrl,
      'mutation { createProject(input: { name: "alpha" }) { id rootPath } }',
    ));
    writeFileSync(join(alpha.rootPath, 'app.ts'), 'export {};\n');
    git(alpha.rootPath, 'add', 'app.ts');
    git(alpha.rootPath, 'commit', '--quiet', '-m', 'Add the app');
    writeFileSync(join(alpha.rootPath, 'notes.txt'), 'uncommitted\n');
    await gqlData(mesh.gatewayUrl, 'mutation ($p: ID!) { acquireWorkspace(projectId: $p, purpose: "e2e review") { id } }', { p: alpha.id });
    await gqlData(mesh.gatewayUrl, 'mutation ($p: ID!) { acquireMutationLock(projectId: $p, purpose: "e2e", holder: "tester") { id } }', { p: alpha.id });

    const board = await eventually(async () => {
      expect((await refresh()).ribAction.ok).toBe(true);
      const { snapshot } = await gqlData<{ snapshot: { payload: Board } }>(mesh.gatewayUrl, '{ snapshot(key: "rib:projects") { version payload } }');
      expect(snapshot.payload.projects[0]?.lock).not.toBeNull();
      return snapshot.payload;
    });
    expect(board.totals).toEqual({ projects: 1, dirty: 1, leases: 1, locked: 1 });
    expect(board.projects[0]).toMatchObject({
      name: 'alpha',
      state: 'ok',
      branch: 'main',
      head: git(alpha.rootPath, 'rev-parse', 'HEAD'),
      lastCommit: { subject: 'Add the app' },
      dirty: { total: 1, untracked: 1, files: [{ path: 'notes.txt', status: '??' }] },
      leases: [{ purpose: 'e2e review', branch: expect.stringMatching(/^keelson\/alpha-/), checkedOut: true }],
      lock: { holder: 'tester', purpose: 'e2e' },
    });
  });

  it('streams each refresh as a frame to a snapshotFrames subscriber, and resumes after a dropped socket with nothing missed', async () => {
    const first = subscribe<FrameData>(mesh.gatewayWsUrl, FRAMES, { keys: ['rib:projects'] });
    // Without a cursor: the current version first.
    const [current] = await first.take(1);
    const currentVersion = current!.data!.snapshotFrames.version;
    expect(current!.data!.snapshotFrames).toMatchObject({ key: 'rib:projects', ribId: 'projects', payload: { totals: { projects: 1 } } });

    const bumped = await refresh();
    expect(bumped.ribAction.data.version).toBe(currentVersion + 1);
    const [live] = await first.take(1);
    expect(live!.data!.snapshotFrames).toMatchObject({ version: currentVersion + 1, payload: { projects: [{ name: 'alpha', branch: 'main' }] } });
    const lastCursor = live!.data!.snapshotFrames.cursor;
    await first.drop();

    // While no one listens: two more versions, and frames of another key that must not leak in.
    await refresh();
    await gqlData(mesh.gatewayUrl, 'mutation { ingest(ribId: "notes", text: "remember the #release") { ok } }');
    await refresh();

    const resumed = subscribe<FrameData>(mesh.gatewayWsUrl, FRAMES, { keys: ['rib:projects'], after: lastCursor });
    const missed = await resumed.take(2);
    expect(missed.map((m) => m.data!.snapshotFrames.version)).toEqual([currentVersion + 2, currentVersion + 3]);
    expect(missed.every((m) => m.data!.snapshotFrames.key === 'rib:projects' && m.data!.snapshotFrames.payload.totals.projects === 1)).toBe(true);
    expect(Number(missed[0]!.data!.snapshotFrames.cursor)).toBeGreaterThan(Number(lastCursor));

    await refresh();
    const [after] = await resumed.take(1);
    expect(after!.data!.snapshotFrames.version).toBe(currentVersion + 4);
    await new Promise((r) => setTimeout(r, 300));
    expect(resumed.pending()).toBe(0);
    await resumed.close();
  });

  it('never lets canvasAction reach a verb a rib reserves for the board', async () => {
    const { ingest } = await gqlData<{ ingest: { ok: boolean; data: { id: string } } }>(mesh.gatewayUrl, 'mutation { ingest(ribId: "notes", text: "keep this") { ok data } }');
    const id = ingest.data.id;
    const act = (field: 'ribAction' | 'canvasAction', ribId: string, type: string, payload?: unknown) =>
      gqlData<Record<string, { ok: boolean; error: string | null; data: unknown; effect: string | null }>>(
        mesh.gatewayUrl,
        `mutation ($r: ID!, $t: String!, $p: JSON) { ${field}(ribId: $r, type: $t, payload: $p) { ok error data effect } }`,
        { r: ribId, t: type, p: payload },
      ).then((d) => d[field]!);

    expect(await act('canvasAction', 'notes', 'delete-note', { id })).toEqual({
      ok: false,
      error: "'delete-note' is reserved for the board; an html canvas may only pin, unpin, discuss",
      data: null,
      effect: null,
    });
    expect(await act('canvasAction', 'projects', 'refresh')).toMatchObject({ ok: false, error: expect.stringMatching(/board action/) });
    // The safe subset works from a canvas, and its reply keeps an open-chat effect.
    expect(await act('canvasAction', 'notes', 'discuss', { id })).toMatchObject({ ok: true, effect: 'open-chat' });
    // The origin is the server's to stamp: there is no argument a caller could set it with.
    const claim = await gql(mesh.gatewayUrl, 'mutation { canvasAction(ribId: "notes", type: "delete-note", origin: "board") { ok } }');
    expect(claim.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    // From the board the same verb runs.
    expect(await act('ribAction', 'notes', 'delete-note', { id })).toEqual({ ok: true, error: null, data: { id, deleted: true }, effect: null });
  });

  it("gives ribs the projects domain's rules and errors through the ProjectsPort (409 on a duplicate, the lock holder named)", async () => {
    const ctx = mesh.ribs.host.context('projects')!;
    await expect(ctx.createProject!({ name: 'alpha' })).rejects.toMatchObject({ name: 'ProjectOperationError', status: 409, message: expect.stringMatching(/already registered/) });
    await expect(ctx.createProject!({ name: 'Bad Name' })).rejects.toMatchObject({ status: 400 });
    const beta = await ctx.createProject!({ name: 'beta' });
    expect(ctx.getProjects!().map((p) => p.name)).toEqual(['alpha', 'beta']);
    const lock = await ctx.acquireMutationLock!({ projectId: beta.id, purpose: 'resolve-review' });
    expect(ctx.getProjects!().find((p) => p.id === beta.id)?.mutationLock).toMatchObject({ holder: 'rib:projects' });
    const second = await gql(mesh.gatewayUrl, 'mutation ($p: ID!) { acquireMutationLock(projectId: $p, purpose: "x", holder: "someone") { id } }', { p: beta.id });
    expect(second.errors?.[0]).toMatchObject({ message: expect.stringMatching(/rib:projects.*resolve-review|resolve-review.*rib:projects/), extensions: { code: 'CONFLICT' } });
    await lock.release();
    // A change made by someone else reaches getProjects through the projects stream.
    await gqlData(mesh.gatewayUrl, 'mutation { createProject(input: { name: "gamma" }) { id } }');
    await eventually(async () => expect(ctx.getProjects!().map((p) => p.name)).toEqual(['alpha', 'beta', 'gamma']));
  });
});
