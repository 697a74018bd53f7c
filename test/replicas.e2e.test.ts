// Issue 14 item 8: two gateway processes and two processes of the runs subgraph (apps/*/main.ts, one
// Postgres, one Temporal), each pair behind a round-robin TCP proxy the test owns. The rest of the
// mesh (the other subgraphs, the worker) runs once, in this process.
import { Client } from 'pg';
import { streams } from '@keelson/schema';
import { freePort } from '@keelson/service';
import { startAppProcess, type AppProcess } from './support/appProcess';
import { bearer, gqlData, registerCredentials, subscribeResumable, type ResumableStream } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';
import { getRun, projectWithWorkflow, respond, startWorkflow, waitForRun } from './support/runs';
import { startTcpProxy, type ProxiedConnection, type TcpProxy } from './support/tcpProxy';
import { quietTemporalRuntime } from './support/temporalServer';

quietTemporalRuntime();

const RELAY = `
name: relay
nodes:
  - { id: warm, type: bash, bash: "sleep 1; echo warm" }
  - { id: gate, type: approval, depends_on: [warm], prompt: Ship it? }
  - { id: ship, type: bash, depends_on: [gate], bash: "echo shipped" }
`;

interface EventView {
  cursor: string;
  type: string;
  nodeId: string | null;
}
const RUN_EVENTS = 'subscription ($after: String, $runId: ID) { runEvents(after: $after, runId: $runId) { cursor type nodeId } }';

const health = (port: number) => `http://127.0.0.1:${port}/health`;
const graphql = (port: number) => `http://127.0.0.1:${port}/graphql`;

describe('two replicas of the gateway and of the runs subgraph behind round-robin proxies', () => {
  let mesh: TestMesh;
  /** In front of the two gateway processes: what clients speak to. */
  let front: TcpProxy;
  /** In front of the two runs processes: the runs URL both gateways are given. */
  let runsProxy: TcpProxy;
  const runs: AppProcess[] = [];
  const gateways: AppProcess[] = [];
  let gatewayUrls: string[];
  let frontUrl: string;
  let project: { id: string };
  const unregister: (() => void)[] = [];

  beforeAll(async () => {
    mesh = await startTestMesh();
    const runsPorts = [await freePort(), await freePort()];
    const gatewayPorts = [await freePort(), await freePort()];
    runsProxy = await startTcpProxy(runsPorts);
    front = await startTcpProxy(gatewayPorts);
    const base: NodeJS.ProcessEnv = { ...mesh.rawEnv, KEELSON_HOST: '127.0.0.1', KEELSON_LOG_LEVEL: 'warn' };
    const subgraphUrls = { ...mesh.subgraphUrls, runs: graphql(runsProxy.port) };
    const urlEnv = Object.fromEntries(Object.entries(subgraphUrls).map(([name, url]) => [`KEELSON_${name.toUpperCase()}_URL`, url]));
    // Four processes at once: each pays for its own TypeScript boot.
    const starting = [
      ...runsPorts.map((port) =>
        startAppProcess('runs', { ...base, KEELSON_RUNS_PORT: String(port), TEMPORAL_ADDRESS: mesh.temporal.address, KEELSON_PROJECTS_URL: mesh.subgraphUrls.projects }, health(port)),
      ),
      ...gatewayPorts.map((port) => startAppProcess('gateway', { ...base, ...urlEnv, KEELSON_GATEWAY_PORT: String(port) }, health(port))),
    ];
    const settled = await Promise.allSettled(starting);
    settled.forEach((s, i) => s.status === 'fulfilled' && (i < 2 ? runs : gateways).push(s.value));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;

    gatewayUrls = gatewayPorts.map(graphql);
    frontUrl = graphql(front.port);
    for (const url of [...gatewayUrls, frontUrl]) unregister.push(registerCredentials(url, bearer(mesh.adminToken!.token)));
    project = await projectWithWorkflow(gatewayUrls[0]!, 'replicas', { 'relay.yaml': RELAY });
  }, 150_000);

  afterAll(async () => {
    for (const u of unregister) u();
    await Promise.all([...gateways, ...runs].map((p) => p.stop()));
    await front?.close();
    await runsProxy?.close();
    await mesh?.teardown();
  });

  it('answers through gateway B a run started through gateway A, both runs replicas serving', async () => {
    const [a, b] = gatewayUrls as [string, string];
    const started = await startWorkflow(a, 'relay', { projectId: project.id });
    expect(started.status).toBe('RUNNING');
    const paused = await waitForRun(b, started.id, (r) => r.status === 'PAUSED');
    expect(paused.pendingApproval).toMatchObject({ nodeId: 'gate', prompt: 'Ship it?' });
    await expect(respond(b, started.id, 'gate', 'approve', paused.pendingApproval!.pauseId)).resolves.toMatchObject({ ok: true, decision: 'approved', duplicate: false });
    const done = await waitForRun(b, started.id, (r) => r.status === 'SUCCEEDED');
    expect(done.nodes.map((n) => [n.id, n.status])).toEqual([
      ['warm', 'SUCCEEDED'],
      ['gate', 'SUCCEEDED'],
      ['ship', 'SUCCEEDED'],
    ]);
    // Gateway A reads the same run.
    expect(await getRun(a, started.id)).toEqual(done);
    // Each gateway's first connection to the runs proxy took a replica of its own.
    expect(new Set(runsProxy.connections.map((c) => c.target))).toEqual(new Set([0, 1]));
  }, 60_000);

  it('resumes runEvents on the other replica, with no gap and no duplicate, when a runs replica and then a gateway replica die', async () => {
    const events: EventView[] = [];
    /** Takes events into `events` until `done` holds for one (then []), or until the stream fails (then its errors). */
    const take = async (stream: ResumableStream<{ runEvents: EventView }>, done: (e: EventView) => boolean) => {
      for (;;) {
        const r = await stream.next(30_000);
        if (r.errors?.length || !r.data) return r.errors ?? [];
        events.push(r.data.runEvents);
        if (done(r.data.runEvents)) return [];
      }
    };
    /** The connections `proxy` accepted from `from` on that `match`. */
    const since = (proxy: TcpProxy, from: number, match: (c: ProxiedConnection) => boolean) => proxy.connections.slice(from).filter(match);
    const upgrade = (c: ProxiedConnection) => c.head.startsWith('GET ');

    // The front proxy takes turns: this test's first connection goes to gateway 0, its second to gateway 1 (killed
    // below), its third to gateway 0 again. The run is started through gateway 1 and answered through gateway 0.
    const started = await startWorkflow(gatewayUrls[1]!, 'relay', { projectId: project.id });
    const [front0, runs0] = [front.connections.length, runsProxy.connections.length];
    const first = subscribeResumable<{ runEvents: EventView }, { runId: string; after?: string | null }>(frontUrl, RUN_EVENTS, { runId: started.id });
    expect(await take(first, () => true)).toEqual([]);
    const [served] = since(front, front0, () => true);
    const [upstream] = since(runsProxy, runs0, upgrade);
    expect(served).toMatchObject({ open: true, target: 0 });
    expect(upstream).toMatchObject({ open: true, target: expect.any(Number) });

    // The runs replica serving the subscription is killed: the gateway ends it with SERVICE_UNAVAILABLE.
    await runs[upstream!.target!]!.kill();
    const lost = await take(first, () => false);
    expect(lost[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
    await first.close();

    // Resubscribed from the last cursor, through the front again: the other gateway, and (the dead one skipped) the other runs replica.
    const [front1, runs1] = [front.connections.length, runsProxy.connections.length];
    const second = subscribeResumable<{ runEvents: EventView }, { runId: string; after?: string | null }>(frontUrl, RUN_EVENTS, { runId: started.id, after: events.at(-1)!.cursor });
    expect(await take(second, (e) => e.type === 'RUN_PAUSED')).toEqual([]);
    const [resumedOn] = since(front, front1, () => true);
    const [resumedUpstream] = since(runsProxy, runs1, upgrade);
    expect(resumedOn!.target).toBe(1);
    expect(resumedUpstream!.target).toBe(1 - upstream!.target!);

    // The gateway serving it now is killed; the client reconnects through the front by itself and resumes from its
    // cursor on the surviving gateway, while the approval goes through that one.
    await gateways[1]!.kill();
    const survivor = gatewayUrls[0]!;
    const paused = await getRun(survivor, started.id);
    await expect(respond(survivor, started.id, 'gate', 'approve', paused.pendingApproval!.pauseId)).resolves.toMatchObject({ ok: true, decision: 'approved' });
    expect(await take(second, (e) => e.type === 'RUN_SUCCEEDED')).toEqual([]);
    expect(second.connections()).toBe(2);
    expect(since(front, front1, () => true).map((c) => c.target)).toEqual([1, 0]);
    await second.close();

    // What the client saw is what the log stores: every event of the run, in order, once.
    const db = new Client({ connectionString: mesh.db.url });
    await db.connect();
    const stored = await db.query<{ seq: string; type: string }>('SELECT seq::text, type FROM events WHERE stream = $1 AND key = $2 ORDER BY seq', [streams.runs, started.id]).finally(() => db.end());
    expect(events.map((e) => [e.cursor, e.type])).toEqual(stored.rows.map((r) => [r.seq, r.type]));
    expect(events.at(-1)!.type).toBe('RUN_SUCCEEDED');
    const done = await waitForRun(survivor, started.id, (r) => r.status === 'SUCCEEDED');
    expect(done.nodes.find((n) => n.id === 'gate')!.output).toBe('approve');
    const { run } = await gqlData<{ run: { events: { edges: { cursor: string }[] } } }>(survivor, 'query ($id: ID!) { run(id: $id) { events(first: 100) { edges { cursor } } } }', { id: started.id });
    expect(run.events.edges.map((e) => e.cursor)).toEqual(events.map((e) => e.cursor));
  }, 90_000);
});
