import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startModelServer, type ModelServer } from '@keelson/model-server';
import { freePort } from '@keelson/service';
import { findTemporalCli, startDevServer, type DevServer } from '@keelson/temporal';
import { gqlData } from './support/client';
import { modelServerEnv, startTestMesh, type TestMesh } from './support/mesh';
import { expectSwarmInvariants, managedBusEnv, SWARM_FIELDS, waitForSwarm, type SwarmView } from './support/swarms';
import { threeAgentRules } from './support/swarmScript';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

const START = `mutation ($input: StartSwarmInput!) { startSwarm(input: $input) { ${SWARM_FIELDS} } }`;
const TASK = { task: 'Check parts A and B of the plan.', agents: [{ name: 'alice', role: 'checks part A' }, { name: 'bob', role: 'checks part B' }] };

describe('a swarm while its Temporal server restarts (file-backed dev server)', () => {
  let dir: string;
  let server: DevServer | undefined;
  let mesh: TestMesh | undefined;
  let model: ModelServer;
  let cli: string;
  let port: number;
  let dbFilename: string;

  beforeAll(async () => {
    const found = await findTemporalCli();
    if (!found) throw new Error('the temporal CLI is missing; globalSetup says how to build it');
    cli = found;
    dir = await mkdtemp(join(tmpdir(), 'keelson-swarm-temporal-'));
    port = await freePort();
    dbFilename = join(dir, 'temporal.db');
    server = await startDevServer({ cli, port, uiPort: 0, dbFilename });
    model = await startModelServer({ rules: threeAgentRules({ workerDelayMs: 4000 }) });
    mesh = await startTestMesh({ KEELSON_RUN_HEARTBEAT_TIMEOUT_MS: '3000', ...modelServerEnv(model), ...(await managedBusEnv()) }, { temporal: { address: server.address, uiUrl: server.uiUrl } });
  }, 120_000);

  afterAll(async () => {
    await mesh?.teardown();
    await server?.stop();
    await model?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('goes on from its history: every message once, each addressed agent woken once, DONE, every token revoked', async () => {
    const url = mesh!.gatewayUrl;
    const { startSwarm: s } = await gqlData<{ startSwarm: SwarmView }>(url, START, { input: TASK });
    await waitForSwarm(url, s.id, (x) => x.agents.some((a) => a.id === 'alice' && a.status === 'BUSY'), 60_000);
    const stoppedAt = Date.now();
    await server!.stop();
    server = await startDevServer({ cli, port, uiPort: 0, dbFilename });
    const downFor = Date.now() - stoppedAt;
    const done = await waitForSwarm(url, s.id, (x) => x.status !== 'RUNNING', 150_000);
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'Both parts are fine: A is fine, B is fine.' });
    const facts = await expectSwarmInvariants(url, s.id);
    console.log(`Temporal down and back in ${downFor} ms; the swarm ended DONE after ${Date.now() - stoppedAt} ms (${facts.messages} messages, ${facts.turns} turns)`);
  }, 240_000);
});
