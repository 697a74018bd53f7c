import { startModelServer, type ModelServer, type Rule } from '@keelson/model-server';
import { gqlData } from './support/client';
import { modelServerEnv, startTestMesh, type TestMesh } from './support/mesh';
import { busOwner, expectSwarmInvariants, getSwarm, managedBusEnv, SWARM_FIELDS, waitForSwarm, type SwarmView } from './support/swarms';
import { threeAgentRules } from './support/swarmScript';
import { quietTemporalRuntime } from './support/temporalServer';
import { startWorkerProcess, type WorkerProcess } from './support/workerProcess';

quietTemporalRuntime();

const START = `mutation ($input: StartSwarmInput!) { startSwarm(input: $input) { ${SWARM_FIELDS} } }`;
const TASK = { task: 'Check parts A and B of the plan.', agents: [{ name: 'alice', role: 'checks part A' }, { name: 'bob', role: 'checks part B' }] };

/** A lead that waits for a human to tell it to conclude (a message only the tail can bring). */
const waitsForHuman: Rule = {
  name: 'lead waits for a human',
  reply: (ctx) => {
    if (!ctx.system.includes('You lead the swarm')) return undefined;
    const heard = [ctx.userText, ...ctx.earlierUserTexts].some((t) => t.includes('HUMAN SAYS conclude'));
    return heard ? [{ toolCall: { name: 'chat_report', arguments: { conclusion: 'the human said so' } } }, { text: 'reported' }] : { text: 'waiting for a human' };
  },
};

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('swarms surviving crashes (worker SIGKILL mid-turn and mid-tail, ClickClack killed and brought back)', () => {
  let mesh: TestMesh;
  let model: ModelServer;
  let url: string;
  let workerEnv: NodeJS.ProcessEnv;
  const workers: WorkerProcess[] = [];

  const turnRunning = (s: SwarmView, agent: string) => s.agents.find((a) => a.id === agent)?.status === 'BUSY';

  beforeAll(async () => {
    model = await startModelServer({ rules: [] });
    mesh = await startTestMesh({ KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '3000', ...modelServerEnv(model), ...(await managedBusEnv()) }, { worker: false });
    url = mesh.gatewayUrl;
    workerEnv = { ...mesh.rawEnv, TEMPORAL_ADDRESS: mesh.temporal.address, KEELSON_PROJECTS_URL: mesh.projects.url };
  }, 120_000);
  afterAll(async () => {
    for (const w of workers) await w.stop().catch(() => undefined);
    await mesh?.teardown();
    await model?.stop();
  });

  it('kills the worker mid-turn: the turns are taken over once, tokens re-minted and the old ones revoked, the swarm ends DONE', async () => {
    model.setRules(threeAgentRules({ workerDelayMs: 5000 }));
    workers.push(await startWorkerProcess(workerEnv));
    const { startSwarm: s } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: TASK });
    await waitForSwarm(url, s.id, (x) => turnRunning(x, 'alice') && turnRunning(x, 'bob'), 60_000);
    await new Promise((r) => setTimeout(r, 1000));
    const killedAt = Date.now();
    await workers.at(-1)!.kill();
    workers.push(await startWorkerProcess(workerEnv));
    const done = await waitForSwarm(url, s.id, (x) => x.status !== 'RUNNING', 120_000);
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'Both parts are fine: A is fine, B is fine.' });
    const facts = await expectSwarmInvariants(url, s.id);
    // The killed worker held the workers' tokens: each got a new one (and the old revoked).
    const tokens = (await (await busOwner(url)).listBotsRaw(done.channel.workspaceId)) as unknown;
    expect(JSON.stringify(tokens).match(/btok_/g)!.length).toBeGreaterThan(3);
    console.log(`worker SIGKILL mid-turn → DONE after ${Date.now() - killedAt} ms; ${facts.messages} messages, ${facts.turns} turns`);
  }, 240_000);

  it('kills the worker mid-tail: a human\'s post made meanwhile reaches the swarm once, through the replayed bus', async () => {
    model.setRules([waitsForHuman]);
    const { startSwarm: s } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: { task: 'Wait for a human.' } });
    await waitForSwarm(url, s.id, (x) => (x.agents[0]?.turns ?? 0) >= 1 && x.agents[0]?.status === 'IDLE', 60_000);
    await workers.at(-1)!.kill();
    const owner = await busOwner(url);
    const human = await owner.postMessage((await getSwarm(url, s.id)).channel.channelId, { body: 'HUMAN SAYS conclude' });
    workers.push(await startWorkerProcess(workerEnv));
    const done = await waitForSwarm(url, s.id, (x) => x.status !== 'RUNNING', 120_000);
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'the human said so' });
    await expectSwarmInvariants(url, s.id);
    const { swarm } = await gqlData<{ swarm: { messages: { edges: { node: { id: string } }[] } } }>(url, 'query ($id: ID!) { swarm(id: $id) { messages(first: 50) { edges { node { id } } } } }', { id: s.id });
    expect(swarm.messages.edges.filter((e) => e.node.id === human.message.id)).toHaveLength(1);
  }, 240_000);

  it('kills ClickClack mid-turn: the mesh brings it back on the same data, replays from its cursor, and the swarm ends DONE', async () => {
    model.setRules(threeAgentRules({ workerDelayMs: 3000 }));
    const { startSwarm: s } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: TASK });
    await waitForSwarm(url, s.id, (x) => turnRunning(x, 'alice'), 60_000);
    const before = await gqlData<{ swarmServer: { pid: number } }>(url, '{ swarmServer { pid } }');
    process.kill(before.swarmServer.pid, 'SIGKILL');
    const done = await waitForSwarm(url, s.id, (x) => x.status !== 'RUNNING', 120_000);
    expect(done).toMatchObject({ status: 'DONE' });
    const after = await until('the bus back', async () => (await gqlData<{ swarmServer: { pid: number | null; running: boolean } }>(url, '{ swarmServer { pid running } }')).swarmServer, 30_000);
    expect(after).toMatchObject({ running: true });
    expect(after.pid).not.toBe(before.swarmServer.pid);
    await expectSwarmInvariants(url, s.id);
  }, 240_000);
});
