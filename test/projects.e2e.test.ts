import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ProjectEventsDocument } from '@keelson/client';
import { gql, gqlData, subscribe, subscribeResumable } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';

const CREATE = `mutation Create($input: CreateProjectInput!) {
  createProject(input: $input) { id name rootPath isGitRepo headCommit workspaces { id } mutationLock { holder } }
}`;
const EVENTS = `subscription Events($after: String) {
  projectEvents(after: $after) { cursor type at project { id name } }
}`;

type EventData = { projectEvents: { cursor: string; type: string; project: { id: string; name: string } | null } };

describe('the mesh, end to end through the gateway', () => {
  let mesh: TestMesh;

  beforeAll(async () => {
    mesh = await startTestMesh();
  });
  afterAll(async () => {
    await mesh?.teardown();
  });

  it('creates a project over HTTP and lists it', async () => {
    const { createProject } = await gqlData<{ createProject: { id: string; name: string; rootPath: string; isGitRepo: boolean; headCommit: string } }>(
      mesh.gatewayUrl,
      CREATE,
      { input: { name: 'alpha' } },
    );
    expect(createProject.rootPath).toBe(join(mesh.workspaceRoot, 'alpha'));
    expect(createProject.isGitRepo).toBe(true);
    expect(createProject.headCommit).toMatch(/^[0-9a-f]{40}$/);
    expect(existsSync(join(mesh.workspaceRoot, 'alpha', '.git'))).toBe(true);

    const { projects } = await gqlData<{ projects: { name: string }[] }>(mesh.gatewayUrl, '{ projects { name } }');
    expect(projects.map((p) => p.name)).toEqual(['alpha']);
  });

  it('streams project events over graphql-ws through the gateway and resumes from a cursor with nothing missed', async () => {
    const first = subscribe<EventData>(mesh.gatewayWsUrl, EVENTS, {});
    // The replay: everything so far (alpha's creation).
    const [replayed] = await first.take(1);
    expect(replayed!.data!.projectEvents).toMatchObject({ type: 'PROJECT_CREATED', project: { name: 'alpha' } });

    await gqlData(mesh.gatewayUrl, CREATE, { input: { name: 'beta' } });
    const [live] = await first.take(1);
    expect(live!.data!.projectEvents).toMatchObject({ type: 'PROJECT_CREATED', project: { name: 'beta' } });
    const lastCursor = live!.data!.projectEvents.cursor;

    await first.drop();

    // While nobody listens: two more mutations.
    const { createProject: gamma } = await gqlData<{ createProject: { id: string } }>(mesh.gatewayUrl, CREATE, { input: { name: 'gamma' } });
    await gqlData(mesh.gatewayUrl, 'mutation($p: ID!) { acquireMutationLock(projectId: $p, purpose: "e2e", holder: "tester") { id } }', {
      p: gamma.id,
    });

    const resumed = subscribe<EventData>(mesh.gatewayWsUrl, EVENTS, { after: lastCursor });
    const missed = await resumed.take(2);
    expect(missed.map((m) => [m.data!.projectEvents.type, m.data!.projectEvents.project!.name])).toEqual([
      ['PROJECT_CREATED', 'gamma'],
      ['MUTATION_LOCK_ACQUIRED', 'gamma'],
    ]);
    const cursors = missed.map((m) => Number(m.data!.projectEvents.cursor));
    expect(cursors[0]).toBeGreaterThan(Number(lastCursor));
    expect(cursors[1]).toBeGreaterThan(cursors[0]!);

    // Live again after the replay, and no duplicate arrives.
    await gqlData(mesh.gatewayUrl, CREATE, { input: { name: 'delta' } });
    const [after] = await resumed.take(1);
    expect(after!.data!.projectEvents.project!.name).toBe('delta');
    await new Promise((r) => setTimeout(r, 300));
    expect(resumed.pending()).toBe(0);
    await resumed.close();
  });

  it('rejects a malformed cursor with BAD_USER_INPUT', async () => {
    const sub = subscribe<EventData>(mesh.gatewayWsUrl, EVENTS, { after: 'not-a-cursor' });
    const res = await sub.next();
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    await sub.close();
  });

  it('answers bad input through the gateway with the registry code and changes nothing', async () => {
    const res = await gql(mesh.gatewayUrl, CREATE, { input: { name: 'Not Valid' } });
    expect(res.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT' });
    expect(existsSync(join(mesh.workspaceRoot, 'Not Valid'))).toBe(false);
    const { projects } = await gqlData<{ projects: { name: string }[] }>(mesh.gatewayUrl, '{ projects { name } }');
    expect(projects.map((p) => p.name)).toEqual(['alpha', 'beta', 'gamma', 'delta']);
  });

  it('resumes a @keelson/client subscription after its socket drops mid-stream: nothing lost, nothing repeated', async () => {
    const create = (name: string) => gqlData(mesh.gatewayUrl, CREATE, { input: { name } });
    await create('drop-0');
    // Reconnects wait at this gate, so events are made while no socket is open.
    let open!: () => void;
    let gate = Promise.resolve();
    const stream = subscribeResumable(mesh.gatewayWsUrl, ProjectEventsDocument, {}, { retryWait: () => gate });
    const names = async (n: number) => (await stream.take(n)).map((r) => r.data!.projectEvents.project?.name);
    // Replayed from the start: up to drop-0's creation.
    while ((await names(1))[0] !== 'drop-0');

    await create('drop-1');
    expect(await names(1)).toEqual(['drop-1']);
    const cursorBefore = stream.cursor();

    gate = new Promise<void>((r) => (open = r));
    stream.dropSocket();
    await create('drop-2');
    await create('drop-3');
    expect(stream.pending()).toBe(0);
    open();

    expect(await names(2)).toEqual(['drop-2', 'drop-3']);
    expect(stream.connections()).toBe(2);
    expect(stream.cursor()).not.toBe(cursorBefore);
    // Dropped again while an event is on its way: still each once.
    const racing = create('drop-4');
    stream.dropSocket();
    await racing;
    await create('drop-5');
    expect(await names(2)).toEqual(['drop-4', 'drop-5']);
    await new Promise((r) => setTimeout(r, 300));
    expect(stream.pending()).toBe(0);
    expect(stream.connections()).toBe(3);
    await stream.close();
  });
});
