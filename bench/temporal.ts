// `npm run bench:temporal`: the mesh's Temporal paths against bare Temporal client calls on the same
// workflow, in one run. `startWorkflow` through the gateway → the run's first `runEvent` at a
// subscriber, next to a bare client start of the same dagRun; and an approval answered through
// `respondToRun` next to a raw `respond` Update on the same kind of gate. The subgraphs and the worker
// run in this process, the gateway in a process of its own (as `npm start` runs it), the subscriber
// in a worker thread. Progress to stderr, the report to stdout.
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { RunStore } from '@keelson/runs';
import { connectClient, respondUpdate, runWorkflowId, startRunWorkflow } from '@keelson/temporal';
import { runBench, startBenchStack, stderrProgress, type Teardown } from './benchStack';
import { now, startReceivers, type Receivers } from './receivers';
import { fixed, percentile, table, times } from './report';

const ROUNDS = Number(process.env.KEELSON_BENCH_ROUNDS ?? 4);
/** Runs per round: each started one way (mesh or bare) and answered one way (mesh or raw), crossed. */
const RUNS_PER_ROUND = Number(process.env.KEELSON_BENCH_RUNS ?? 12);
const WARMUP_RUNS = 4;
const WORKFLOW = 'bench-gate';
const GATE = 'gate';
/** One approval gate and nothing else: the first event is RUN_STARTED, the second RUN_PAUSED. */
const WORKFLOW_YAML = `name: ${WORKFLOW}
description: One approval gate (bench:temporal).
nodes:
  - { id: ${GATE}, type: approval, prompt: "Go?" }
`;
const EVENTS = 'subscription BenchRuns($after: String) { runEvents(after: $after) { cursor type runId pauseId } }';

const progress = stderrProgress('bench:temporal');

type Samples = Record<'meshStartResponse' | 'meshFirstEvent' | 'bareStart' | 'bareFirstEvent' | 'meshRespond' | 'rawUpdate', number[]>;

async function main(teardown: Teardown): Promise<string> {
  const mesh = await startBenchStack(teardown, progress, { gateway: 'process', env: { KEELSON_LOG_LEVEL: 'warn' } });
  // A home workflow (`<KEELSON_HOME>/workflows`): the catalog is read per start, so it is found at once.
  const { dataSource, events, settings, catalog } = mesh.runs.services;
  await mkdir(join(settings.keelsonHome, 'workflows'), { recursive: true });
  await writeFile(join(settings.keelsonHome, 'workflows', `${WORKFLOW}.yaml`), WORKFLOW_YAML);

  const token = mesh.adminToken!.token;
  const gql = async <T>(query: string, variables: Record<string, unknown>): Promise<T> => {
    const res = await fetch(mesh.gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    const body = (await res.json()) as { data?: T; errors?: unknown[] };
    if (res.status !== 200 || body.errors || !body.data) throw new Error(`gateway answered ${res.status}: ${JSON.stringify(body).slice(0, 400)}`);
    return body.data;
  };

  // The bare side: a Temporal client of the bench's own, the runs domain's one writer to register runs.
  const temporal = await connectClient({ address: mesh.temporal.address, namespace: mesh.temporal.namespace });
  teardown.push('close the bench Temporal client', () => temporal.connection.close());
  const store = new RunStore(dataSource, events);

  // Every run's events, through the gateway, from the beginning (the database is fresh).
  const receivers: Receivers = startReceivers(teardown);
  await receivers.run({
    kind: 'open',
    url: mesh.gatewayWsUrl,
    connectionParams: { authorization: `Bearer ${token}` },
    query: EVENTS,
    variables: { after: null },
    count: 1,
    parallel: 1,
    keyFields: ['runId', 'type'],
  });

  /** startWorkflow through the gateway; the run id and the time of the answer. */
  const meshStart = async (s: Samples | undefined) => {
    const t0 = now();
    const data = await gql<{ startWorkflow: { id: string } }>('mutation BenchStart($name: String!) { startWorkflow(name: $name) { id } }', { name: WORKFLOW });
    const answered = now();
    const first = await receivers.delivered(`${data.startWorkflow.id}:RUN_STARTED`);
    s?.meshStartResponse.push(answered - t0);
    s?.meshFirstEvent.push(first.first - t0);
    return { runId: data.startWorkflow.id, workflowId: runWorkflowId(WORKFLOW, data.startWorkflow.id) };
  };

  /** The same dagRun started by a bare client call; the run is registered first (not timed), as startWorkflow does. */
  const bareStart = async (s: Samples | undefined) => {
    const entry = (await catalog.load(null)).entries.find((e) => e.name === WORKFLOW)!;
    const runId = randomUUID();
    const workflowId = runWorkflowId(WORKFLOW, runId);
    const home = settings.keelsonHome;
    await store.createRun({
      id: runId,
      workflowName: WORKFLOW,
      title: WORKFLOW,
      definition: entry.definition,
      scope: entry.scope,
      inputs: {},
      projectId: null,
      projectName: null,
      ribId: null,
      startedByRibId: null,
      cwd: join(home, 'runs', runId, 'work'),
      artifactsDir: join(home, 'runs', runId, 'artifacts'),
      temporalWorkflowId: workflowId,
    });
    const t0 = now();
    await startRunWorkflow(temporal, {
      taskQueue: settings.temporal.taskQueue,
      workflowId,
      workflowName: WORKFLOW,
      title: WORKFLOW,
      project: null,
      rib: null,
      input: { runId, launch: 1, heartbeatTimeoutMs: settings.heartbeatTimeoutMs },
    });
    const answered = now();
    const first = await receivers.delivered(`${runId}:RUN_STARTED`);
    s?.bareStart.push(answered - t0);
    s?.bareFirstEvent.push(first.first - t0);
    return { runId, workflowId };
  };

  /** Waits for the gate, answers it one way or the other, and waits for the run to succeed. */
  const answer = async (run: { runId: string; workflowId: string }, how: 'mesh' | 'raw', s: Samples | undefined) => {
    const paused = await receivers.delivered(`${run.runId}:RUN_PAUSED`);
    const pauseId = String(paused.event.pauseId);
    const t0 = now();
    if (how === 'mesh') {
      const data = await gql<{ respondToRun: { ok: boolean; error: string | null } }>(
        'mutation BenchRespond($runId: ID!, $pauseId: String) { respondToRun(runId: $runId, nodeId: "gate", text: "approve", pauseId: $pauseId) { ok error } }',
        { runId: run.runId, pauseId },
      );
      if (!data.respondToRun.ok) throw new Error(`respondToRun refused: ${data.respondToRun.error}`);
      s?.meshRespond.push(now() - t0);
    } else {
      await temporal.workflow.getHandle(run.workflowId).executeUpdate(respondUpdate, { args: [{ nodeId: GATE, text: 'approve', pauseId }] });
      s?.rawUpdate.push(now() - t0);
    }
    await receivers.delivered(`${run.runId}:RUN_SUCCEEDED`);
  };

  const one = async (i: number, s: Samples | undefined) => {
    const run = i % 2 === 0 ? await meshStart(s) : await bareStart(s);
    await answer(run, Math.floor(i / 2) % 2 === 0 ? 'mesh' : 'raw', s);
  };

  progress(`warm-up: ${WARMUP_RUNS} runs`);
  for (let i = 0; i < WARMUP_RUNS; i++) await one(i, undefined);
  const samples: Samples = { meshStartResponse: [], meshFirstEvent: [], bareStart: [], bareFirstEvent: [], meshRespond: [], rawUpdate: [] };
  for (let round = 0; round < ROUNDS; round++) {
    progress(`round ${round + 1}/${ROUNDS}: ${RUNS_PER_ROUND} runs`);
    // Which way goes first rotates per round.
    for (let i = 0; i < RUNS_PER_ROUND; i++) await one(i + round, samples);
  }
  return report(samples);
}

function report(s: Samples): string {
  const stat = (xs: number[]) => ({ n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), mean: xs.reduce((a, b) => a + b, 0) / xs.length });
  const row = (label: string, xs: number[]) => {
    const x = stat(xs);
    return [label, String(x.n), fixed(x.p50, 2), fixed(x.p99, 2), fixed(x.mean, 2)];
  };
  const first = stat(s.meshFirstEvent);
  const bare = stat(s.bareStart);
  const bareFirst = stat(s.bareFirstEvent);
  const respond = stat(s.meshRespond);
  const raw = stat(s.rawUpdate);
  return [
    '',
    `Keelson Mesh bench:temporal — node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} at the end`,
    `workflow ${WORKFLOW}: one approval gate (dagRun on the mesh's worker, in-memory Temporal dev server); ${ROUNDS} rounds of ${RUNS_PER_ROUND} runs,`,
    'each run started one way (mesh / bare) and answered one way (mesh / raw), crossed and rotating; runEvents through the gateway in a worker thread',
    '',
    table(
      ['path', 'samples', 'p50 ms', 'p99 ms', 'mean ms'],
      [
        row('startWorkflow (gateway) → its answer', s.meshStartResponse),
        row('startWorkflow (gateway) → first runEvent delivered', s.meshFirstEvent),
        row('bare client start (workflow.start)', s.bareStart),
        row('bare client start → first runEvent delivered', s.bareFirstEvent),
        row('respondToRun (gateway) → its answer', s.meshRespond),
        row('raw respond Update (executeUpdate)', s.rawUpdate),
      ],
      ['left', 'right', 'right', 'right', 'right'],
    ),
    '',
    `  start: first runEvent − bare start: p50 +${fixed(first.p50 - bare.p50, 2)} ms, mean +${fixed(first.mean - bare.mean, 2)} ms (target ≤ +20 ms): ${first.mean - bare.mean <= 20 ? 'met' : 'MISSED'}`,
    `  start: first runEvent − bare start's first runEvent (negative: the bare start's RUN_STARTED waits for the workflow task and first activity, the mesh's is written by startWorkflow): p50 +${fixed(first.p50 - bareFirst.p50, 2)} ms, mean +${fixed(first.mean - bareFirst.mean, 2)} ms`,
    `  approval: respondToRun / raw Update: p50 ${times(respond.p50 / raw.p50)}, mean ${times(respond.mean / raw.mean)}, p99 ${times(respond.p99 / raw.p99)} (target ≤ 2×): ${respond.mean / raw.mean <= 2 ? 'met' : 'MISSED'}`,
    '',
  ].join('\n');
}

runBench(main, progress);
