import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { startModelServer, type ModelServer } from '@keelson/model-server';
import { ClickClackClient } from '@keelson/swarms';
import { gql, gqlData } from './support/client';
import { modelServerEnv, startTestMesh, type TestMesh } from './support/mesh';
import { clickclackBinary, freePort, SWARM_FIELDS, tokensIn, waitForSwarm, type SwarmView } from './support/swarms';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();
jest.setTimeout(120_000);

const START = `mutation ($input: StartSwarmInput!) { startSwarm(input: $input) { ${SWARM_FIELDS} } }`;
const SERVER = '{ swarmServer { mode url running reason liveSwarms } }';

describe('a mesh with neither a ClickClack binary nor a URL', () => {
  let mesh: TestMesh;

  beforeAll(async () => {
    const path = (process.env.PATH ?? '').split(delimiter).filter((dir) => !dir.includes('clickclack')).join(delimiter);
    mesh = await startTestMesh({ PATH: path, CLICKCLACK_BIN: undefined, CLICKCLACK_URL: undefined, CLICKCLACK_TOKEN: undefined });
  });
  afterAll(async () => {
    await mesh?.teardown();
  });

  it('says the swarms are UNAVAILABLE and why; startSwarm is SERVICE_UNAVAILABLE with that reason and creates nothing; the rest of the mesh works', async () => {
    const { swarmServer } = await gqlData<{ swarmServer: { mode: string; running: boolean; reason: string } }>(mesh.gatewayUrl, SERVER);
    expect(swarmServer).toMatchObject({ mode: 'UNAVAILABLE', running: false, reason: expect.stringMatching(/^no clickclack binary: set CLICKCLACK_BIN or put clickclack on PATH, or run ClickClack yourself and set CLICKCLACK_URL and CLICKCLACK_TOKEN$/) });
    const refused = await gql(mesh.gatewayUrl, START, { input: { task: 'anything' } });
    expect(refused.errors?.[0]).toMatchObject({ message: swarmServer.reason, extensions: { code: 'SERVICE_UNAVAILABLE', status: 503 } });
    expect((await gqlData<{ swarms: { edges: unknown[] } }>(mesh.gatewayUrl, '{ swarms { edges { cursor } } }')).swarms.edges).toEqual([]);
    for (const m of ['startSwarmServer { mode }', 'stopSwarmServer { mode }', 'resetSwarmServer(confirm: true) { mode }']) {
      expect((await gql(mesh.gatewayUrl, `mutation { ${m} }`)).errors?.[0]?.extensions).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    }
    const project = await gqlData<{ createProject: { name: string } }>(mesh.gatewayUrl, 'mutation { createProject(input: { name: "still-works" }) { name } }');
    expect(project.createProject.name).toBe('still-works');
  });
});

describe('a mesh pointed at a ClickClack somebody else runs (external mode)', () => {
  let mesh: TestMesh;
  let model: ModelServer;
  let server: ChildProcess;
  let dir: string;
  let busUrl: string;
  let owner: ClickClackClient;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'keelson-external-bus-'));
    busUrl = `http://127.0.0.1:${await freePort()}`;
    server = spawn(clickclackBinary(), ['serve', '--addr', busUrl.replace('http://', ''), '--data', join(dir, 'data'), '--dev-bootstrap=true'], { stdio: 'ignore' });
    const probe = new ClickClackClient({ url: busUrl });
    const deadline = Date.now() + 30_000;
    while (!(await probe.ready())) {
      if (Date.now() > deadline) throw new Error('the external ClickClack did not come up');
      await new Promise((r) => setTimeout(r, 100));
    }
    const ownerToken = await probe.magicSession();
    owner = probe.withToken(ownerToken);
    model = await startModelServer({
      rules: [{ name: 'lead reports', reply: (ctx) => (ctx.system.includes('You lead the swarm') ? [{ toolCall: { name: 'chat_report', arguments: { conclusion: 'done externally' } } }, { text: 'ok' }] : undefined) }],
    });
    mesh = await startTestMesh({ ...modelServerEnv(model), CLICKCLACK_URL: busUrl, CLICKCLACK_TOKEN: ownerToken, CLICKCLACK_BIN: undefined });
  });
  afterAll(async () => {
    await mesh?.teardown();
    await model?.stop();
    server?.kill('SIGINT');
    await new Promise((r) => server?.once('exit', r));
    await rm(dir, { recursive: true, force: true });
  });

  it('reports the server EXTERNAL and refuses to start, stop or reset it (FORBIDDEN)', async () => {
    const { swarmServer } = await gqlData<{ swarmServer: { mode: string; url: string; running: boolean } }>(mesh.gatewayUrl, SERVER);
    expect(swarmServer).toMatchObject({ mode: 'EXTERNAL', url: busUrl, running: true });
    for (const m of ['startSwarmServer { mode }', 'stopSwarmServer { mode }', 'resetSwarmServer(confirm: true) { mode }']) {
      const refused = await gql(mesh.gatewayUrl, `mutation { ${m} }`);
      expect(refused.errors?.[0]).toMatchObject({ extensions: { code: 'FORBIDDEN', status: 403 }, message: expect.stringContaining(`ClickClack at ${busUrl} is run by somebody else`) });
    }
    expect(await new ClickClackClient({ url: busUrl }).ready()).toBe(true);
  });

  it('runs a swarm on it with the owner\'s token, and revokes every token at the end', async () => {
    const { startSwarm } = await gqlData<{ startSwarm: SwarmView }>(mesh.gatewayUrl, START, { input: { task: 'Conclude at once.' } });
    const done = await waitForSwarm(mesh.gatewayUrl, startSwarm.id, (s) => s.status !== 'RUNNING');
    expect(done).toMatchObject({ status: 'DONE', conclusion: 'done externally', channel: { webUrl: `${busUrl}/app` } });
    expect(tokensIn(await owner.listBotsRaw(done.channel.workspaceId)).filter((t) => !t.revokedAt)).toEqual([]);
  });
});
