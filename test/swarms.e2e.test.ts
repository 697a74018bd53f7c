import { startModelServer, type ModelServer } from '@keelson/model-server';
import { gql, gqlData, subscribe } from './support/client';
import { modelServerEnv, startTestMesh, type TestMesh } from './support/mesh';
import { busOwner, managedBusEnv, SWARM_FIELDS, tokensIn, waitForSwarm, type SwarmView } from './support/swarms';
import { threeAgentRules } from './support/swarmScript';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();
jest.setTimeout(180_000);

const START = `mutation ($input: StartSwarmInput!) { startSwarm(input: $input) { ${SWARM_FIELDS} } }`;
const EVENTS = `subscription ($id: ID, $after: String) { swarmEvents(swarmId: $id, after: $after) {
  __typename
  ... on SwarmStarted { cursor swarmId }
  ... on AgentJoined { cursor agentId handle lead }
  ... on MessageIngested { cursor messageId threadRootId authorAgentId woke }
  ... on TurnStarted { cursor agentId turnNo messageIds }
  ... on TurnEnded { cursor agentId turnNo status }
  ... on AgentRetired { cursor agentId reason }
  ... on SwarmNudged { cursor nudge }
  ... on SwarmConcluded { cursor agentId }
  ... on SwarmEnded { cursor status reason }
} }`;

interface EventView {
  __typename: string;
  cursor: string;
  messageId?: string;
  woke?: string[];
  status?: string;
}

const TASK = {
  task: 'Check parts A and B of the plan.',
  agents: [
    { name: 'alice', role: 'checks part A' },
    { name: 'bob', role: 'checks part B' },
  ],
  evidence: [{ title: 'The plan (PR #7)', sourceUrl: 'https://forge.example/pr/7', body: 'diff --git a/plan.md b/plan.md\n+Part A\n+Part B\n' }],
};

describe('swarms through the gateway (a managed ClickClack, the local model server)', () => {
  let mesh: TestMesh;
  let model: ModelServer;
  let url: string;

  beforeAll(async () => {
    model = await startModelServer({ rules: threeAgentRules() });
    mesh = await startTestMesh({ ...modelServerEnv(model), ...(await managedBusEnv()) });
    url = mesh.gatewayUrl;
  });
  afterAll(async () => {
    await mesh?.teardown();
    await model?.stop();
  });

  it('reports the managed bus without starting it', async () => {
    const { swarmServer } = await gqlData<{ swarmServer: { mode: string; running: boolean; liveSwarms: number; url: string; reason: string | null } }>(url, '{ swarmServer { mode running liveSwarms url reason } }');
    expect(swarmServer).toMatchObject({ mode: 'MANAGED', running: false, liveSwarms: 0, reason: expect.stringContaining('not started yet') });
  });

  it('runs a three-agent swarm to DONE: kickoff, the lead routes, workers answer in threads, the lead concludes; readable through messages and thread; every token revoked; swarmEvents resumes with nothing missing', async () => {
    const live = subscribe<{ swarmEvents: EventView }>(mesh.gatewayWsUrl, EVENTS, { id: null, after: null });
    const { startSwarm: started } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: TASK });
    expect(started).toMatchObject({ status: 'RUNNING', op: { kind: 'swarm', status: 'RUNNING' }, temporalWorkflowId: `swarm-${started.id}` });
    expect(started.temporalUiUrl).toContain(encodeURIComponent(`swarm-${started.id}`));

    // Take a few events live, drop the socket, resume from the last cursor.
    const firstPart = (await live.take(4, 60_000)).map((r) => r.data!.swarmEvents);
    await live.drop();
    const done = await waitForSwarm(url, started.id, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'Both parts are fine: A is fine, B is fine.', op: { status: 'SUCCEEDED' } });
    expect(done.agents.map((a) => [a.id, a.lead, a.status, a.finished])).toEqual([
      ['lead', true, 'IDLE', false],
      ['alice', false, 'IDLE', true],
      ['bob', false, 'IDLE', true],
    ]);

    const everything = subscribe<{ swarmEvents: EventView }>(mesh.gatewayWsUrl, EVENTS, { id: started.id, after: null });
    const all: EventView[] = [];
    for (;;) {
      const e = (await everything.next(30_000)).data!.swarmEvents;
      all.push(e);
      if (e.__typename === 'SwarmEnded') break;
    }
    await everything.close();
    const resumed = subscribe<{ swarmEvents: EventView }>(mesh.gatewayWsUrl, EVENTS, { id: started.id, after: firstPart.at(-1)!.cursor });
    const rest: EventView[] = [];
    while (rest.length < all.length - firstPart.length) rest.push((await resumed.next(30_000)).data!.swarmEvents);
    await resumed.close();
    expect([...firstPart, ...rest].map((e) => e.cursor)).toEqual(all.map((e) => e.cursor));
    expect(all[0]!.__typename).toBe('SwarmStarted');
    expect(all.at(-1)).toMatchObject({ __typename: 'SwarmEnded', status: 'DONE' });

    // The conversation, read through the gateway (bodies come from the bus on request).
    const { swarm } = await gqlData<{ swarm: { messages: { edges: { cursor: string; node: { id: string; body: string; author: { agentId: string | null; kind: string }; replyCount: number } }[] } } }>(
      url,
      'query ($id: ID!) { swarm(id: $id) { messages(first: 50) { edges { cursor node { id body replyCount author { agentId kind } } } } } }',
      { id: started.id },
    );
    const roots = swarm.messages.edges.map((e) => e.node);
    expect(roots.map((m) => m.author.agentId ?? m.author.kind)).toEqual(['human', 'lead', 'lead', 'human']);
    expect(roots[0]!.body).toContain('The plan (PR #7) <https://forge.example/pr/7>');
    const threads = await Promise.all(
      roots.slice(1, 3).map(async (r) =>
        (await gqlData<{ swarm: { thread: { root: { id: string }; replies: { body: string; author: { agentId: string } }[] } } }>(
          url,
          'query ($id: ID!, $root: ID!) { swarm(id: $id) { thread(rootId: $root) { root { id } replies { body author { agentId } } } } }',
          { id: started.id, root: r.id },
        )).swarm.thread,
      ),
    );
    expect(threads.map((t) => t.replies.map((r) => [r.author.agentId, r.body]))).toEqual([[['alice', 'A is fine']], [['bob', 'B is fine']]]);
    const ingested = all.filter((e) => e.__typename === 'MessageIngested');
    expect(new Set(ingested.map((e) => e.messageId)).size).toBe(ingested.length);
    expect(ingested.find((e) => e.messageId === roots[1]!.id)?.woke).toEqual(['alice']);

    // The op is the swarm: its frames carry the progress lines.
    const { op } = await gqlData<{ op: { kind: string; status: string; frames: { edges: { node: { type: string; line: string | null } }[] } } }>(
      url,
      'query ($id: ID!) { op(id: $id) { kind status frames(first: 200) { edges { node { type line } } } } }',
      { id: done.op.id },
    );
    expect(op.frames.edges.map((e) => e.node.type)).toEqual(expect.arrayContaining(['OP_STARTED', 'OP_LOG', 'OP_SUCCEEDED']));
    expect(op.frames.edges.some((e) => /the lead reported a conclusion/.test(e.node.line ?? ''))).toBe(true);

    // Every token the swarm held is revoked.
    const { swarmServer } = await gqlData<{ swarmServer: { url: string; running: boolean; liveSwarms: number } }>(url, '{ swarmServer { url running liveSwarms } }');
    expect(swarmServer).toMatchObject({ running: true, liveSwarms: 0 });
    const owner = await busOwner(url);
    const tokens = tokensIn(await owner.listBotsRaw(done.channel.workspaceId));
    expect(tokens.length).toBeGreaterThanOrEqual(3);
    expect(tokens.filter((t) => !t.revokedAt)).toEqual([]);
  });

  it('takes the operator\'s post, steers through steerSwarm and steerOp, and stops through cancelOp; refuses steering once ended', async () => {
    model.setRules(threeAgentRules({ leadNeverConcludes: true, workerDelayMs: 20_000 }));
    const { startSwarm: s } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: TASK });
    await waitForSwarm(url, s.id, (x) => x.agents.some((a) => a.id === 'alice' && a.status === 'BUSY'));
    const posted = await gqlData<{ postToSwarm: { id: string; author: { kind: string }; body: string } }>(url, 'mutation ($id: ID!) { postToSwarm(id: $id, body: "the operator is watching") { id body author { kind } } }', { id: s.id });
    expect(posted.postToSwarm).toMatchObject({ body: 'the operator is watching', author: { kind: 'human' } });
    // Sent twice with one idempotency key (a retry after a lost answer): one note, the same answer.
    const STEER = 'mutation ($id: ID!, $note: String!) { steerSwarm(id: $id, note: $note, idempotencyKey: "steer-1") { accepted reason } }';
    for (let i = 0; i < 2; i++) expect((await gqlData<{ steerSwarm: { accepted: boolean } }>(url, STEER, { id: s.id, note: 'focus on A' })).steerSwarm).toEqual({ accepted: true, reason: null });
    expect((await gql(url, STEER, { id: s.id, note: 'another note' })).errors?.[0]?.extensions).toMatchObject({ code: 'CONFLICT' });
    await gqlData(url, 'mutation ($id: ID!) { steerOp(id: $id, note: "and on B") { id } }', { id: s.op.id });
    const steered = async () =>
      (await gqlData<{ op: { frames: { edges: { node: { type: string; note: string | null } }[] } } }>(url, 'query ($id: ID!) { op(id: $id) { frames(first: 200) { edges { node { type note } } } } }', { id: s.op.id })).op.frames.edges
        .filter((e) => e.node.type === 'OP_STEERED')
        .map((e) => e.node.note);
    const deadline = Date.now() + 30_000;
    while ((await steered()).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await steered()).toEqual(['focus on A', 'and on B']);
    await gqlData(url, 'mutation ($id: ID!) { cancelOp(id: $id) { id } }', { id: s.op.id });
    // The swarm's row ends first; its op settles right after (the cancelled workflow's own close).
    const stopped = await waitForSwarm(url, s.id, (x) => x.status !== 'RUNNING' && x.op.status !== 'RUNNING');
    expect(stopped).toMatchObject({ status: 'STOPPED', op: { status: 'CANCELLED' } });
    const late = await gqlData<{ steerSwarm: { accepted: boolean; reason: string } }>(url, 'mutation ($id: ID!) { steerSwarm(id: $id, note: "too late") { accepted reason } }', { id: s.id });
    expect(late.steerSwarm).toEqual({ accepted: false, reason: 'the swarm has ended (STOPPED)' });
    const after = await gql(url, 'mutation ($id: ID!) { postToSwarm(id: $id, body: "anyone?") { id } }', { id: s.id });
    expect(after.errors?.[0]?.extensions).toMatchObject({ code: 'CONFLICT' });
    const owner = await busOwner(url);
    expect(tokensIn(await owner.listBotsRaw(stopped.channel.workspaceId)).filter((t) => !t.revokedAt)).toEqual([]);
  });

  it('refuses bad input with BAD_USER_INPUT saying how much to cut, and creates nothing', async () => {
    const before = (await gqlData<{ swarms: { edges: unknown[] } }>(url, '{ swarms(first: 100) { edges { cursor } } }')).swarms.edges.length;
    const long = await gql(url, START, { input: { task: 'x'.repeat(8010) } });
    expect(long.errors?.[0]).toMatchObject({ message: 'input.task: the task is 8,010 characters; at most 8,000 are allowed: cut 10', extensions: { code: 'BAD_USER_INPUT' } });
    const title = await gql(url, START, { input: { task: 't', evidence: [{ title: 'two\nlines', sourceUrl: 'ftp://x', body: 'b' }] } });
    expect(title.errors?.[0]?.message).toMatch(/title is one line.*source URL must be an http or https URL/);
    expect((await gqlData<{ swarms: { edges: unknown[] } }>(url, '{ swarms(first: 100) { edges { cursor } } }')).swarms.edges.length).toBe(before);
  });
});
