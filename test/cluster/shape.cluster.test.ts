// Issue 30: the production shape — a Temporal server on Postgres (persistence and SQL visibility),
// HAProxy in front of two gateways and two replicas each of runs and sessions, two workers on one
// task queue, every service its own process (`startCluster`, what `npm run start:cluster` runs) —
// booted once and then put through its faults. Each scenario writes a ledger row for the table.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { haproxyCommand } from '@keelson/stack';
import { Ledger } from '../faults/ledger';
import { gql, subscribeResumable, type ResumableStream } from '../support/client';
import { getRun, projectWithWorkflow, respond, startWorkflow, waitForRun } from '../support/runs';
import { quietTemporalRuntime } from '../support/temporalServer';
import { until } from '../support/until';
import { crashOnceWorkflow, gatedWorkflow, pidsMarked } from '../support/workflowFixtures';
import { closedLoop, LoadTally, mixRequest, openLoop, sendWithRetries } from './load';
import { createProject, listRuns, workerRunning, startTestCluster, sampleConnections, storedKeyedProjects, storedRunEvents, storedRunIds, temporalList, type TestCluster } from './support';

quietTemporalRuntime();

interface EventView {
  cursor: string;
  type: string;
  nodeId: string | null;
}
const RUN_EVENTS = 'subscription ($after: String, $runId: ID) { runEvents(after: $after, runId: $runId) { cursor type nodeId } }';

/** A query through `url` every `everyMs` until stopped: how many were sent and how many failed. */
function steadyQueries(url: string, everyMs: number) {
  let sent = 0;
  let failed = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      sent += 1;
      const at = new Date().toISOString();
      const failure = await gql<{ projects: { id: string }[] }>(url, '{ projects { id } }').then(
        (r) => (!r.errors?.length && Array.isArray(r.data?.projects) ? undefined : JSON.stringify(r.errors).slice(0, 300)),
        (err: Error) => err.message.slice(0, 300),
      );
      if (failure) {
        failed += 1;
        // The first few say why, with when (to line up with the restarts on stderr).
        if (failed <= 5) process.stderr.write(`[load] ${at} query failed: ${failure}\n`);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { sent, failed };
    },
  };
}

/** One quick node: the rolling restart's steady writes. */
const TICK = `
name: tick
nodes:
  - { id: tick, type: bash, bash: "echo tick" }
`;

/**
 * `startWorkflow(tick)` every `everyMs`, each with an idempotency key, sent again with the same key
 * only where the README allows (a lost answer or SERVICE_UNAVAILABLE; `sendWithRetries`).
 */
function steadyStarts(url: string, token: string, projectId: string, everyMs: number, ledger: Ledger) {
  const ids: string[] = [];
  const tally = new LoadTally();
  let running = true;
  const loop = (async () => {
    for (let n = 0; running; n++) {
      const data = await sendWithRetries(tally, `startWorkflow #${n}`, url, token, 'mutation ($p: ID, $k: String) { startWorkflow(name: "tick", projectId: $p, idempotencyKey: $k) { id } }', { p: projectId, k: `rolling-${process.pid}-${n}` });
      const id = (data?.startWorkflow as { id: string } | undefined)?.id;
      if (id) {
        ids.push(id);
        ledger.ack(id);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { ids, tally };
    },
  };
}

/**
 * Every run event from the start of the log, through `url`. A dropped socket is resumed by the
 * client itself; a stream the gateway ends with SERVICE_UNAVAILABLE (the replica behind it went) is
 * subscribed again from its cursor (README "What scales out"); any other end is a failure, counted,
 * and subscribed again so the count of events still says what was missed.
 */
function allRunEvents(url: string) {
  const events: EventView[] = [];
  const failures: string[] = [];
  let resumes = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const stream = subscribeResumable<{ runEvents: EventView }, { after?: string | null }>(url, 'subscription ($after: String) { runEvents(after: $after) { cursor type nodeId } }', { after: events.at(-1)?.cursor ?? null });
      for (;;) {
        const r = await stream.next(1_000).catch(() => undefined);
        if (stopped) break;
        if (!r) continue;
        if (r.errors?.length || !r.data) {
          if (!r.errors?.length || !r.errors.every((e) => e.extensions?.code === 'SERVICE_UNAVAILABLE')) failures.push(`${new Date().toISOString()} runEvents ended: ${JSON.stringify(r.errors ?? r).slice(0, 300)}`);
          break;
        }
        events.push(r.data.runEvents);
      }
      await stream.close();
      if (!stopped) resumes += 1;
    }
  })();
  return {
    resumes: () => resumes,
    failures,
    /** Ends the subscription now. */
    async stop() {
      stopped = true;
      await loop;
    },
    /** Waits until as many events arrived as `stored()` counts (or 60 s), then stops and returns them. */
    async until(stored: () => Promise<number>) {
      const want = await stored();
      const deadline = Date.now() + 60_000;
      while (events.length < want && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      stopped = true;
      await loop;
      return events;
    },
  };
}

let cluster: TestCluster;
/** Load and subscribers a scenario started, stopped after it even when it failed (so nothing keeps the run open). */
const leftovers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  await Promise.all(leftovers.splice(0).map((stop) => stop().catch(() => undefined)));
});
/** Scenarios started and not (yet) passed — failed or timed out: the cluster's logs are kept when there is one. */
const unfinished = new Set<string>();

/** `it`, noting which scenarios did not pass for the teardown. */
function scenario(title: string, fn: () => Promise<void>, timeoutMs: number): void {
  // eslint-disable-next-line jest/expect-expect -- the assertions are in `fn`, checked at each scenario(...) call
  it(
    title,
    async () => {
      unfinished.add(title);
      await fn();
      unfinished.delete(title);
    },
    timeoutMs,
  );
}

beforeAll(async () => {
  cluster = await startTestCluster();
}, 400_000);

afterAll(async () => {
  await cluster?.teardown({ keepLogs: unfinished.size > 0 });
}, 120_000);

/** Requests and connections each server of `backend` holds now, by replica index. */
async function sessionsOn(backend: string): Promise<number[]> {
  const csv = await haproxyCommand(cluster.loadBalancer.socket, 'show stat');
  const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n');
  const cols = header!.split(',');
  const at = (name: string) => cols.indexOf(name);
  return rows
    .map((r) => r.split(','))
    .filter((r) => r[at('pxname')] === backend && r[at('svname')]!.startsWith(`${backend}-`))
    .sort((a, b) => a[at('svname')]!.localeCompare(b[at('svname')]!))
    .map((r) => Number(r[at('scur')]));
}

describe('the production shape', () => {
  scenario('runs project-check through the load balancer: started, paused, answered and listed, from both gateways', async () => {
    const ledger = new Ledger('cluster: project-check through HAProxy, both gateways');
    const [g1, g2] = cluster.replicaUrls.gateway as [string, string];
    const projectId = await createProject(cluster.gatewayUrl, 'cluster-check');
    const started = await startWorkflow(cluster.gatewayUrl, 'project-check', { projectId });
    ledger.ack(started.id);
    const paused = await waitForRun(g1, started.id, (r) => r.status === 'PAUSED', 90_000);
    const { nodeId, pauseId } = paused.pendingApproval!;
    await expect(respond(g2, started.id, nodeId, 'approve', pauseId)).resolves.toMatchObject({ ok: true, decision: 'approved', duplicate: false });
    const done = await waitForRun(cluster.gatewayUrl, started.id, (r) => r.status === 'SUCCEEDED', 90_000);
    expect(done.nodes.every((n) => ['SUCCEEDED', 'SKIPPED'].includes(n.status))).toBe(true);
    // Each gateway, asked directly, lists the run and reads it alike.
    for (const gateway of [g1, g2]) expect(await listRuns(gateway, projectId)).toEqual([{ id: started.id, status: 'SUCCEEDED' }]);
    expect(await getRun(g1, started.id)).toEqual(await getRun(g2, started.id));
    // Both runs replicas served the gateways (round robin behind HAProxy).
    ledger.write(await storedRunIds(cluster.db.url, projectId));
  }, 240_000);

  scenario("finds exactly a project's runs with `temporal workflow list --query \"KeelsonProject = '…'\"` on the Postgres visibility store", async () => {
    const ledger = new Ledger('cluster: KeelsonProject query on Postgres visibility');
    // KeelsonProject carries the project's name (what an operator types).
    const names = ['cluster-visible-a', 'cluster-visible-b'];
    const ids = [await createProject(cluster.gatewayUrl, names[0]!), await createProject(cluster.gatewayUrl, names[1]!)];
    const runsOf: string[][] = [[], []];
    for (const which of [0, 0, 1]) {
      const started = await startWorkflow(cluster.gatewayUrl, 'project-check', { projectId: ids[which]! });
      ledger.ack(started.id);
      runsOf[which]!.push(started.temporalWorkflowId);
    }
    for (const which of [0, 1]) {
      const expected = [...runsOf[which]!].sort();
      const query = `KeelsonProject = '${names[which]}'`;
      // SQL visibility is written by the history service's visibility queue: moments behind the start.
      const found = await until(query, () => temporalList(cluster.temporal.address, query), (found) => found.length >= expected.length, 30_000);
      expect(found).toEqual(expected);
      expect(await temporalList(cluster.temporal.address, `${query} AND KeelsonKind = 'run' AND KeelsonWorkflowName = 'project-check'`)).toEqual(expected);
    }
    ledger.write([...(await storedRunIds(cluster.db.url, ids[0]!)), ...(await storedRunIds(cluster.db.url, ids[1]!))]);
  }, 120_000);

  scenario('keeps a runEvents subscription through the load balancer across killing its gateway and then the runs replica behind it: resumed from its cursor, nothing lost or repeated', async () => {
    const ledger = new Ledger('cluster: runEvents across a gateway kill and a runs kill');
    const projectId = await createProject(cluster.gatewayUrl, 'cluster-stream');
    const started = await startWorkflow(cluster.gatewayUrl, 'project-check', { projectId });
    ledger.ack(started.id);
    const events: EventView[] = [];
    const take = async (stream: ResumableStream<{ runEvents: EventView }>, done: (e: EventView) => boolean) => {
      for (;;) {
        const r = await stream.next(60_000);
        if (r.errors?.length || !r.data) return r.errors ?? [];
        events.push(r.data.runEvents);
        if (done(r.data.runEvents)) return [];
      }
    };
    let stream = subscribeResumable<{ runEvents: EventView }, { runId: string; after?: string | null }>(cluster.gatewayUrl, RUN_EVENTS, { runId: started.id });
    expect(await take(stream, (e) => e.type === 'RUN_PAUSED')).toEqual([]);

    // The gateway holding the socket (HAProxy counts it) is killed: the client reconnects through HAProxy to the other and resumes.
    const gatewayLoad = await sessionsOn('gateway');
    const gatewayIndex = gatewayLoad.indexOf(Math.max(...gatewayLoad));
    const gatewayFault = ledger.fault();
    await cluster.kill('gateway', gatewayIndex);
    const survivor = cluster.replicaUrls.gateway![1 - gatewayIndex]!;
    await until('the stream reconnected', () => stream.connections(), (n) => n >= 2, 30_000);
    gatewayFault.recovered();

    // Then the runs replica behind the surviving subscription: the gateway ends it (SERVICE_UNAVAILABLE) and the client resubscribes from its cursor.
    const runsLoad = await sessionsOn('runs');
    const runsIndex = runsLoad.indexOf(Math.max(...runsLoad));
    const runsFault = ledger.fault();
    await cluster.kill('runs', runsIndex);
    const paused = await getRun(survivor, started.id);
    await expect(respond(survivor, started.id, paused.pendingApproval!.nodeId, 'approve', paused.pendingApproval!.pauseId)).resolves.toMatchObject({ ok: true });
    const ended = await take(stream, (e) => e.type === 'RUN_SUCCEEDED');
    if (ended.length) {
      expect(ended[0]?.extensions?.code).toBe('SERVICE_UNAVAILABLE');
      await stream.close();
      stream = subscribeResumable<{ runEvents: EventView }, { runId: string; after?: string | null }>(cluster.gatewayUrl, RUN_EVENTS, { runId: started.id, after: events.at(-1)!.cursor });
      expect(await take(stream, (e) => e.type === 'RUN_SUCCEEDED')).toEqual([]);
    }
    runsFault.recovered();
    await stream.close();

    const stored = await storedRunEvents(cluster.db.url, started.id);
    expect(events.map((e) => [e.cursor, e.type])).toEqual(stored);
    const distinct = new Set(events.map((e) => e.cursor)).size;
    // Both back, for the scenarios after this one.
    await Promise.all([cluster.start('gateway', gatewayIndex), cluster.start('runs', runsIndex)]);
    ledger.write(await storedRunIds(cluster.db.url, projectId), { delivered: events.length, streamPersisted: stored.length, duplicates: events.length - distinct });
  }, 240_000);

  scenario('finishes a run on the other worker when the one running its node is SIGKILLed mid-node, no node acting twice', async () => {
    const ledger = new Ledger('cluster: worker SIGKILLed mid-node, the other finishes');
    const project = await projectWithWorkflow(cluster.gatewayUrl, 'cluster-crashy', { 'crash-once.yaml': crashOnceWorkflow(60) });
    const started = await startWorkflow(cluster.gatewayUrl, 'crash-once', { projectId: project.id });
    ledger.ack(started.id);
    const marker = `keelson-slow-${started.id}`;
    const workerPids = cluster.processes('worker').map((w) => w.pid);
    const holder = await until('the slow node running on a worker', async () => workerRunning(marker, workerPids), (pid) => pid !== undefined, 60_000);
    const index = workerPids.indexOf(holder!);
    const effects = () => readFile(join(started.artifactsDir, 'effects.log'), 'utf8').then((t) => t.split('\n').filter(Boolean), () => [] as string[]);
    expect(await effects()).toEqual(['first']);
    const fault = ledger.fault();
    await cluster.kill('worker', index);
    const done = await waitForRun(cluster.gatewayUrl, started.id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 90_000);
    fault.recovered();
    expect(done.status).toBe('SUCCEEDED');
    expect(await effects()).toEqual(['first', 'slow', 'last']);
    expect(done.nodes.map((n) => [n.id, n.status, n.attempt])).toEqual([
      ['first', 'SUCCEEDED', 1],
      ['slow', 'SUCCEEDED', 2],
      ['last', 'SUCCEEDED', 1],
    ]);
    // The killed worker's attempt died with it (its group), and nothing of it runs on.
    expect(pidsMarked(marker)).toEqual([]);
    await cluster.start('worker', index);
    const acted = await effects();
    ledger.write(await storedRunIds(cluster.db.url, project.id), { duplicates: acted.length - new Set(acted).size, failedByFaults: done.status === 'SUCCEEDED' ? 0 : 1 });
  }, 240_000);

  scenario('keeps runs going across a restart of the Temporal server under steady load: every run finishes, no request fails', async () => {
    const ledger = new Ledger('cluster: Temporal server restarted under load');
    const project = await projectWithWorkflow(cluster.gatewayUrl, 'cluster-restart', { 'restart-gated.yaml': gatedWorkflow });
    const runs: { id: string; artifactsDir: string }[] = [];
    for (let i = 0; i < 3; i++) {
      const started = await startWorkflow(cluster.gatewayUrl, 'restart-gated', { projectId: project.id });
      ledger.ack(started.id);
      runs.push(started);
    }
    const paused = await Promise.all(runs.map((r) => waitForRun(cluster.gatewayUrl, r.id, (v) => v.status === 'PAUSED', 90_000)));
    // Steady reads through HAProxy all along: they need Postgres and the gateways, not Temporal.
    const load = steadyQueries(cluster.gatewayUrl, 100);
    const fault = ledger.fault();
    await cluster.temporal.restart();
    // Each gate is answered once the server is back; a client retries a failed answer with the same pauseId (README "Retries and crashes").
    let retries = 0;
    for (const p of paused) {
      const { nodeId, pauseId } = p.pendingApproval!;
      for (;;) {
        const answered = await respond(cluster.gatewayUrl, p.id, nodeId, 'approve', pauseId).catch(() => undefined);
        if (answered?.ok) break;
        retries += 1;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    fault.recovered();
    const after = await startWorkflow(cluster.gatewayUrl, 'restart-gated', { projectId: project.id });
    ledger.ack(after.id);
    const afterPaused = await waitForRun(cluster.gatewayUrl, after.id, (v) => v.status === 'PAUSED', 90_000);
    await respond(cluster.gatewayUrl, after.id, 'gate', 'approve', afterPaused.pendingApproval!.pauseId);
    const done = await Promise.all([...runs, after].map((r) => waitForRun(cluster.gatewayUrl, r.id, (v) => v.status === 'SUCCEEDED' || v.status === 'FAILED', 90_000)));
    const { sent, failed } = await load.stop();
    expect(done.map((r) => r.status)).toEqual(done.map(() => 'SUCCEEDED'));
    expect(failed).toBe(0);
    expect(sent).toBeGreaterThan(10);
    const effects = await Promise.all([...runs, after].map((r) => readFile(join(r.artifactsDir, 'effects.log'), 'utf8').then((t) => t.split('\n').filter(Boolean).length, () => 0)));
    expect(effects).toEqual([1, 1, 1, 1]);
    ledger.write(await storedRunIds(cluster.db.url, project.id), {
      failedByFaults: done.filter((r) => r.status !== 'SUCCEEDED').length + failed,
      duplicates: effects.reduce((a, n) => a + Math.max(0, n - 1), 0),
      note: `${sent} queries through HAProxy during the restart, ${failed} failed; ${retries} gate answers retried with their pauseId`,
    });
  }, 300_000);

  scenario('answers every request through a rolling restart of every service, one process at a time, under an open loop of mixed load at half the measured capacity: each keyed write stored once, no event lost or repeated', async () => {
    const ledger = new Ledger('cluster: rolling restart of every service under load');
    const url = cluster.gatewayUrl;
    const project = await projectWithWorkflow(url, 'cluster-rolling', { 'tick.yaml': TICK });
    const prefix = `roll${process.pid}`;
    const log = (line: string) => process.stderr.write(`[rolling] ${new Date().toISOString()} ${line}\n`);

    const connections = sampleConnections(cluster.db.url);
    leftovers.push(() => connections.stop());
    // The shape's capacity for the mix, through HAProxy: 8 clients, each sending its next request once answered, for 5 s.
    // (after a second of it unmeasured: every process's first requests compile and connect).
    const capacityTally = new LoadTally();
    await closedLoop(8, 1_000, mixRequest(url, cluster.token, project.id, `${prefix}-warm`, capacityTally));
    const capacity = await closedLoop(8, 5_000, mixRequest(url, cluster.token, project.id, `${prefix}-cap`, capacityTally));
    const target = Math.max(1, Math.round(capacity.perSecond / 2));
    log(`capacity ${capacity.perSecond.toFixed(1)} req/s (${capacity.completed} by 8 closed loops in 5 s; ${capacityTally.summary()}); the roll's open loop: ${target} req/s, at most 256 in flight`);

    // During the roll: the mix at half of it, keyed startWorkflow once a second for run events, and 4 subscribers to every run event.
    const subscribers = Array.from({ length: 4 }, () => allRunEvents(url));
    leftovers.push(...subscribers.map((s) => () => s.stop()));
    const tally = new LoadTally();
    const load = openLoop(target, 256, mixRequest(url, cluster.token, project.id, `${prefix}-roll`, tally));
    const writes = steadyStarts(url, cluster.token, project.id, 1_000, ledger);
    leftovers.push(() => load.stop(), () => writes.stop());
    const recoveryMs: Record<string, number> = {};
    for (const service of ['identity', 'projects', 'runs', 'sessions', 'memory', 'swarms', 'ribs', 'worker', 'gateway']) {
      const fault = ledger.fault();
      await cluster.rollingRestart(service, log);
      recoveryMs[service] = fault.recovered();
    }
    const loaded = await load.stop();
    const starts = await writes.stop();
    const pg = await connections.stop();
    log(`open loop: ${loaded.realisedPerSecond.toFixed(1)} req/s realised of ${target} (${loaded.sent} sent of ${loaded.scheduled} scheduled, ${loaded.shed} shed at the in-flight bound, peak ${loaded.peakInFlight} in flight); mix ${tally.summary()}; startWorkflow ${starts.tally.summary()}`);
    // One run at a time (polling every run at once would be a load of its own).
    const done = [];
    for (const id of starts.ids) done.push(await waitForRun(url, id, (r) => r.status === 'SUCCEEDED' || r.status === 'FAILED', 120_000));
    const delivered = await Promise.all(subscribers.map((s) => s.until(async () => (await storedRunEvents(cluster.db.url)).length)));
    const stored = await storedRunEvents(cluster.db.url);

    const failedRuns = done.filter((r) => r.status !== 'SUCCEEDED').length;
    const streamFailures = subscribers.flatMap((s) => s.failures);
    expect({ failed: capacityTally.failed + tally.failed + starts.tally.failed + streamFailures.length, failedRuns, failures: [...capacityTally.failures, ...tally.failures, ...starts.tally.failures, ...streamFailures.slice(0, 10)] }).toEqual({ failed: 0, failedRuns: 0, failures: [] });
    // The loop kept its schedule: it cannot pass by idling.
    expect(loaded.realisedPerSecond).toBeGreaterThanOrEqual(0.8 * target);
    expect(starts.ids.length).toBeGreaterThan(5);
    // Each keyed createProject stored once, under its key, as the client was told.
    const projects = await storedKeyedProjects(cluster.db.url, prefix);
    const told = new Map([...capacityTally.created, ...tally.created]);
    const attempted = [...capacityTally.attemptedNames, ...tally.attemptedNames];
    const wrong = attempted.filter((name) => {
      const row = projects.get(name);
      return !row || row.ids.length !== 1 || row.keyResult !== row.ids[0] || told.get(name) !== row.ids[0];
    });
    expect({ attempted: attempted.length, stored: projects.size, wrong: wrong.slice(0, 5).map((name) => ({ name, told: told.get(name), ...projects.get(name) })) }).toEqual({ attempted: attempted.length, stored: attempted.length, wrong: [] });
    // Every subscriber got every stored run event once, in order.
    for (const events of delivered) expect(events.map((e) => [e.cursor, e.type])).toEqual(stored);

    told.forEach((id) => ledger.ack(id));
    const figures = `capacity ${capacity.perSecond.toFixed(0)} req/s; open loop ${loaded.realisedPerSecond.toFixed(0)}/${target} req/s realised (${loaded.sent} sent, ${loaded.shed} shed, peak ${loaded.peakInFlight} in flight): ${tally.summary()}; ${starts.ids.length} keyed startWorkflow (${starts.tally.summary()}); ${told.size} keyed createProject stored once each; ${subscribers.length} subscribers × ${stored.length} events (${subscribers.map((s) => s.resumes()).join('/')} resumes); Postgres connections peak ${pg.peak} of ${pg.max}; recovery ms ${Object.entries(recoveryMs).map(([s, ms]) => `${s} ${ms}`).join(', ')}`;
    log(figures);
    const deliveredAll = delivered.flat();
    ledger.write([...(await storedRunIds(cluster.db.url, project.id)), ...[...projects.values()].flatMap((p) => p.ids)], {
      delivered: deliveredAll.length,
      streamPersisted: stored.length * subscribers.length,
      duplicates: delivered.reduce((n, events) => n + events.length - new Set(events.map((e) => e.cursor)).size, 0),
      failedByFaults: capacityTally.failed + tally.failed + starts.tally.failed + streamFailures.length + failedRuns,
      note: figures,
    });
  }, 900_000);
});
