import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { groupAlive, harnessSettings, type ProjectInfo, type HarnessProjectsApi } from '@keelson/harness';
import { parseEnv, sessionUpdatedPayloadSchema, transcriptAppendedPayloadSchema } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { gql, gqlData, subscribe, registerCredentials } from '../../../../test/support/client';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/db';
import { ScriptedHermesDriver } from '../../../../test/support/scriptedDriver';
import { startSessionsSubgraph, type RunningSessions } from '../index';
import { security, serviceCredentials } from '../../../../test/support/auth';

jest.setTimeout(60_000);

const EVENTS = `subscription ($s: ID, $h: ID, $after: String) {
  harnessEvents(sessionId: $s, harnessId: $h, after: $after) {
    __typename cursor sessionId seq turnId
    ... on AssistantDelta { text }
    ... on SessionUpdated { previousSessionId sessionStatus }
    ... on TurnComplete { status }
  }
}`;

type Ev = { __typename: string; sessionId: string; seq: number; text?: string; previousSessionId?: string; status?: string };

describe('the sessions subgraph: rotation, adoption from the native store, confinement', () => {
  let db: TestDatabase;
  let dir: string;
  let running: RunningSessions;
  let driver: ScriptedHermesDriver;
  const project: ProjectInfo = { id: '7d3f1c2a-9b8e-4f6d-a5c4-3b2a1f0e9d8c', name: 'alpha', rootPath: '', workspaces: [] };
  const projects: HarnessProjectsApi = {
    project: async (id) => (id === project.id ? project : null),
    projects: async () => [project],
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'keelson-sessions-'));
    project.rootPath = join(dir, 'alpha');
    await mkdir(project.rootPath);
    // Short leases, so a holder that stops renewing is overtaken within the test.
    const settings = { ...harnessSettings(parseEnv({ KEELSON_HOME: join(dir, 'home') }), process.env), leaseMs: 2000 };
    driver = new ScriptedHermesDriver(settings);
    running = await startSessionsSubgraph({ databaseUrl: db.url, host: '127.0.0.1', port: 0, security, settings, projects, temporal: null, drivers: { hermes: driver }, log: silentLogger() });
    registerCredentials(running.url, serviceCredentials);
  });
  afterAll(async () => {
    await running?.stop();
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const turnDone = async (sessionId: string) => {
    for (let i = 0; i < 200; i++) {
      const { session } = await gqlData<{ session: { turnInFlight: boolean } }>(running.url, 'query ($s: ID!) { session(id: $s) { turnInFlight } }', { s: sessionId });
      if (!session.turnInFlight) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('turn did not finish');
  };

  it('follows a rotation: SessionUpdated with previousSessionId, a durable alias, the old id resolving to the new one, the subscription following it', async () => {
    const { startSession } = await gqlData<{ startSession: { id: string } }>(running.url, `mutation ($p: ID!) { startSession(harnessId: "hermes", input: { projectId: $p }) { id } }`, { p: project.id });
    const old = startSession.id;
    const sub = subscribe<{ harnessEvents: Ev }>(running.wsUrl, EVENTS, { s: old });
    await gqlData(running.url, 'mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "rotate now") { turnId } }', { s: old });
    const events = (await sub.take(4)).map((r) => r.data!.harnessEvents);
    const next = events[1]!.sessionId;
    expect(next).not.toBe(old);
    expect(next).toMatch(/^hermes:\d{8}_\d{6}_[0-9a-f]+$/);
    expect(events.map((e) => [e.__typename, e.sessionId, e.seq])).toEqual([
      ['SessionCreated', old, 1],
      ['SessionUpdated', next, 1],
      ['AssistantDelta', next, 2],
      ['TurnComplete', next, 3],
    ]);
    expect(events[1]).toMatchObject({ previousSessionId: old, sessionStatus: 'rotated' });
    await turnDone(next);

    // The old id resolves to its successor, which lists it as an alias; the listing retires the old id.
    const viaOld = await gqlData<{ session: { id: string; aliases: string[]; status: string } }>(running.url, 'query ($s: ID!) { session(id: $s) { id aliases status } }', { s: old });
    expect(viaOld.session).toEqual({ id: next, aliases: [old], status: 'idle' });
    const listed = await gqlData<{ sessions: { edges: { node: { id: string } }[] } }>(running.url, '{ sessions(harnessId: "hermes") { edges { node { id } } } }');
    expect(listed.sessions.edges.map((e) => e.node.id)).toContain(next);
    expect(listed.sessions.edges.map((e) => e.node.id)).not.toContain(old);

    // Durable: the alias row and the breadcrumb event memory capture reads.
    const ds = running.runtime.dataSource;
    expect(await ds.query('SELECT alias, session_id, kind FROM harness_session_aliases')).toEqual([{ alias: old, session_id: next, kind: 'rotation' }]);
    const [updated] = (await ds.query("SELECT key, payload FROM events WHERE stream = 'harness' AND type = 'SESSION_UPDATED'")) as { key: string; payload: unknown }[];
    expect(updated!.key).toBe(next);
    expect(sessionUpdatedPayloadSchema.parse(updated!.payload)).toMatchObject({ sessionId: next, harnessId: 'hermes', previousSessionId: old });

    // A turn sent to the old id runs in the new session, and the same subscription sees it.
    await gqlData(running.url, 'mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "still here") { turnId } }', { s: old });
    const more = (await sub.take(2)).map((r) => r.data!.harnessEvents);
    expect(more.map((e) => [e.__typename, e.sessionId, e.text ?? e.status])).toEqual([
      ['AssistantDelta', next, 'ANSWER still here'],
      ['TurnComplete', next, 'COMPLETED'],
    ]);
    await sub.close();

    // Capture: every final transcript entry announced once, by id, and fetchable by id.
    await turnDone(next);
    const announced = ((await ds.query("SELECT key, payload FROM events WHERE stream = 'harness' AND type = 'TRANSCRIPT_APPENDED' ORDER BY seq")) as { key: string; payload: unknown }[])
      .map((r) => ({ key: r.key, ...transcriptAppendedPayloadSchema.parse(r.payload) }));
    const ids = announced.filter((a) => a.key === next).flatMap((a) => a.entryIds);
    expect(new Set(ids).size).toBe(ids.length);
    const { transcriptEntries } = await gqlData<{ transcriptEntries: { id: string; role: string; content: string }[] }>(
      running.url,
      'query ($s: ID!, $ids: [ID!]!) { transcriptEntries(sessionId: $s, ids: $ids) { id role content } }',
      { s: next, ids },
    );
    expect(transcriptEntries.map((e) => e.content)).toEqual(['rotate now', 'ANSWER rotate now', 'still here', 'ANSWER still here']);
  });

  it('adopts a session found in the native store into the project it ran in, and refuses turns outside any project', async () => {
    const inside = '20250701_120000_abcdef';
    const outside = '20250701_120000_fedcba';
    await driver.seedNative(inside, project.rootPath);
    await driver.seedNative(outside, dir);
    const listed = await gqlData<{ sessions: { edges: { node: { id: string; origin: string } }[] } }>(running.url, '{ sessions(harnessId: "hermes") { edges { node { id origin } } } }');
    expect(listed.sessions.edges.map((e) => e.node)).toEqual(expect.arrayContaining([{ id: `hermes:${inside}`, origin: 'native' }, { id: `hermes:${outside}`, origin: 'native' }]));
    const byProject = await gqlData<{ sessions: { edges: { node: { id: string } }[] } }>(running.url, 'query ($p: ID) { sessions(projectId: $p) { edges { node { id } } } }', { p: project.id });
    expect(byProject.sessions.edges.map((e) => e.node.id)).toContain(`hermes:${inside}`);
    expect(byProject.sessions.edges.map((e) => e.node.id)).not.toContain(`hermes:${outside}`);

    const { resumeSession } = await gqlData<{ resumeSession: { id: string; origin: string; project: { id: string } | null } }>(
      running.url,
      'mutation ($s: ID!) { resumeSession(id: $s) { id origin project { id } } }',
      { s: `hermes:${inside}` },
    );
    expect(resumeSession).toEqual({ id: `hermes:${inside}`, origin: 'adopted', project: { id: project.id } });

    const before = await running.runtime.dataSource.query("SELECT count(*)::int AS n FROM events WHERE stream = 'harness'");
    const refused = await gql(running.url, 'mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "escape") { turnId } }', { s: `hermes:${outside}` });
    expect(refused.errors?.[0]?.extensions).toMatchObject({ code: 'FORBIDDEN', status: 403 });
    expect(refused.errors?.[0]?.message).toMatch(/neither a project root nor a leased worktree/);
    // Nothing was recorded or run.
    expect(await running.runtime.dataSource.query("SELECT count(*)::int AS n FROM events WHERE stream = 'harness'")).toEqual(before);
    expect(await running.runtime.plane.store.get(`hermes:${outside}`)).toBeNull();
    expect(running.runtime.plane.localTurns()).toEqual([]);
  });

  it('confines attachments to the session directory (realpath: no `..`, no symlink out), starting no turn', async () => {
    const { startSession } = await gqlData<{ startSession: { id: string } }>(running.url, `mutation ($p: ID!) { startSession(harnessId: "pi", input: { projectId: $p }) { id } }`, { p: project.id });
    await writeFile(join(dir, 'secret.txt'), 'outside\n');
    await symlink(join(dir, 'secret.txt'), join(project.rootPath, 'link.txt'));
    const send = (attachments: string[]) =>
      gql(running.url, 'mutation ($s: ID!, $a: [String!]) { sendUserTurn(sessionId: $s, text: "look", attachments: $a) { turnId } }', { s: startSession.id, a: attachments });
    for (const a of ['../secret.txt', join(dir, 'secret.txt'), 'link.txt']) {
      const res = await send([a]);
      expect({ a, code: res.errors?.[0]?.extensions?.code }).toEqual({ a, code: 'FORBIDDEN' });
    }
    expect((await send(['missing.txt'])).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    const hermes = await gql(running.url, 'mutation ($s: ID!) { sendUserTurn(sessionId: $s, text: "x", attachments: ["a.txt"]) { turnId } }', { s: 'hermes:20250701_120000_abcdef' });
    expect(hermes.errors?.[0]?.extensions).toMatchObject({ code: 'CAPABILITY_UNSUPPORTED', capability: 'attachments' });
    const { session } = await gqlData<{ session: { turnInFlight: boolean } }>(running.url, 'query ($s: ID!) { session(id: $s) { turnInFlight } }', { s: startSession.id });
    expect(session.turnInFlight).toBe(false);
    expect(running.runtime.plane.localTurns()).toEqual([]);
  });

  it("exposes the seed's HarnessDriver contract per harness, backed by the control plane", async () => {
    const driver = running.runtime.plane.driverView('hermes');
    expect(await driver.capabilities()).toMatchObject({ startSession: true, resume: true, interrupt: true, approvals: false });
    const s = await driver.startSession({ projectId: project.id });
    expect(s).toMatchObject({ harnessId: 'hermes', cwd: project.rootPath });
    const got: string[] = [];
    const off = driver.subscribe(s.sessionId, (e) => got.push(e.type));
    await new Promise((r) => setTimeout(r, 300));
    await driver.sendUserTurn(s.sessionId, { text: 'hello' });
    for (let i = 0; i < 100 && !got.includes('TURN_COMPLETE'); i++) await new Promise((r) => setTimeout(r, 50));
    off();
    expect(got).toEqual(['ASSISTANT_DELTA', 'TURN_COMPLETE']);
    expect((await driver.listSessions()).map((x) => x.sessionId)).toContain(s.sessionId);
    expect(await driver.getSession(s.sessionId)).toMatchObject({ sessionId: s.sessionId, nativeId: s.nativeId });
    await expect(driver.sendUserTurn(`claude-code:${'0'.repeat(8)}-0000-4000-8000-${'0'.repeat(12)}`, { text: 'x' })).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    await expect(running.runtime.plane.driverView('grok-build').startSession({ projectId: project.id })).rejects.toMatchObject({ code: 'CAPABILITY_UNSUPPORTED' });
  });

  it('runs a task\'s turn once at a time: a retry while an attempt holds the task is TURN_IN_FLIGHT; cancellation kills it; a later attempt runs', async () => {
    const plane = running.runtime.plane;
    const task = await plane.createTask({ harnessId: 'hermes', prompt: 'sleep, then answer', projectId: project.id });
    expect(task.sessionId).toMatch(/^hermes:/);
    const first = new AbortController();
    const beats: unknown[] = [];
    const attempt1 = plane.runTaskTurn(task.id, { attempt: 1, signal: first.signal, heartbeat: (d) => beats.push(d) });
    for (let i = 0; i < 100 && !plane.localTurns().some((t) => t.sessionId === task.sessionId); i++) await new Promise((r) => setTimeout(r, 20));
    const [held] = plane.localTurns().filter((t) => t.sessionId === task.sessionId);
    await expect(plane.runTaskTurn(task.id, { attempt: 2, signal: new AbortController().signal, heartbeat: () => {} })).rejects.toMatchObject({ code: 'TURN_IN_FLIGHT' });
    expect(plane.localTurns().filter((t) => t.sessionId === task.sessionId)).toEqual([held]);
    // The attempt heartbeats while it holds the turn (the first beat within a second or so).
    for (let i = 0; i < 200 && beats.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(beats.length).toBeGreaterThan(0);
    first.abort();
    await expect(attempt1).resolves.toMatchObject({ status: 'INTERRUPTED', sessionId: task.sessionId });
    expect(groupAlive(held!.pgid)).toBe(false);
    await expect(plane.runTaskTurn(task.id, { attempt: 3, signal: new AbortController().signal, heartbeat: () => {} })).resolves.toMatchObject({ status: 'COMPLETED' });
  });

  it('takes over a turn whose holder stopped renewing its lease, reporting that turn LOST', async () => {
    const plane = running.runtime.plane;
    const s = await plane.startSession('hermes', { projectId: project.id });
    const acquiredAt = Date.now();
    await plane.store.acquireTurn(s.id, '11111111-1111-4111-8111-111111111111', 'a-process-that-died', 2000);
    await expect(plane.sendUserTurn(s.id, 'too early')).rejects.toMatchObject({ code: 'TURN_IN_FLIGHT' });
    // Refused while the lease runs, taken over once it lapsed: ask until it is.
    let accepted: Awaited<ReturnType<typeof plane.sendUserTurn>> | undefined;
    while (!accepted && Date.now() - acquiredAt < 15_000) {
      accepted = await plane.sendUserTurn(s.id, 'after the lease lapsed').catch((err: { code?: string }) => {
        if (err.code !== 'TURN_IN_FLIGHT') throw err;
        return undefined;
      });
      if (!accepted) await new Promise((r) => setTimeout(r, 100));
    }
    expect(Date.now() - acquiredAt).toBeGreaterThanOrEqual(1900);
    if (!accepted) throw new Error('the lapsed lease was never taken over');
    await turnDone(s.id);
    const events = (await running.runtime.dataSource.query("SELECT type, payload FROM events WHERE stream = 'harness' AND key = $1 ORDER BY seq", [s.id])) as { type: string; payload: Record<string, unknown> }[];
    expect(events.filter((e) => e.type !== 'TRANSCRIPT_APPENDED').map((e) => [e.type, e.payload.turnId ?? null, e.payload.status ?? null])).toEqual([
      ['SESSION_CREATED', null, null],
      ['TURN_COMPLETE', '11111111-1111-4111-8111-111111111111', 'LOST'],
      ['ASSISTANT_DELTA', accepted.turnId, null],
      ['TURN_COMPLETE', accepted.turnId, 'COMPLETED'],
    ]);
  });
});
