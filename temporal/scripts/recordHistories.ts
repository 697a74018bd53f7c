// Records the event history of every workflow scenario below into temporal/histories/<name>.json, for
// replay.int.test.ts. Re-record only on purpose: a history is the contract that deployed runs hold us to.
// Needs the local Postgres (KEELSON_TEST_ADMIN_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres).
//   node -r ./scripts/register.js temporal/scripts/recordHistories.ts [--address host:port] [--only name,name]
import type { Client } from '@temporalio/client';
import { workflowTypes } from '@keelson/schema';
import { ADDRESS_ENV } from '../../test/support/temporalServer';
import { connectClient, createActivities, startEcho, startWorker } from '../src';
import { opWorkflowId, startOpWorkflow } from '../src/runClient';
import { opSteerUpdate, respondUpdate, steerSignal } from '../src/workflows/messages';
import { opWorkWorkflowId } from '../src/workflows/opWork';
import { STEER_KEY_PREFIX } from '../src/workflows/steerableOp';
import { RunHarness } from '../test/runHarness';
import { recordScenarios, recordingTarget, runRecording } from './recording';

const TASK_QUEUE = 'record-histories';

/** One history to record: which execution of which workflow. */
interface Recorded {
  workflowId: string;
  /** @default the latest execution */
  runId?: string;
}

type Scenario = (ctx: { client: Client; runs: RunHarness }) => Promise<Recorded>;

const GATED = `
name: recorded-gate
nodes:
  - { id: a, type: bash, bash: "echo a" }
  - { id: b, type: bash, bash: "echo b" }
  - { id: gate, type: approval, depends_on: [a, b], prompt: "Ship $ARTIFACTS_DIR/plan.md?" }
  - { id: skip, type: bash, depends_on: [gate], when: { node: gate, equals: reject }, bash: "echo never" }
  - { id: ship, type: bash, depends_on: [gate], bash: "echo shipped" }
`;

const CHAIN = `
name: recorded-chain
nodes:
  - { id: a, type: bash, bash: "echo a" }
  - { id: gate, type: approval, depends_on: [a], prompt: "continue?" }
  - { id: p1, type: bash, depends_on: [a], bash: "echo p1" }
  - { id: p2, type: bash, depends_on: [p1], bash: "echo p2" }
  - { id: p3, type: bash, depends_on: [p2], bash: "echo p3" }
  - { id: z, type: bash, depends_on: [gate, p3], bash: "echo z" }
`;

const SLEEPER = `
name: recorded-sleeper
nodes:
  - { id: nap, type: bash, bash: "sleep 600" }
`;

async function firstAndLastExecution(client: Client, workflowId: string): Promise<string[]> {
  const runIds: { runId: string; start: number }[] = [];
  for await (const e of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runIds.push({ runId: e.runId, start: e.startTime.getTime() });
  return runIds.sort((a, b) => a.start - b.start).map((r) => r.runId);
}

const scenarios: Record<string, Scenario> = {
  [workflowTypes.echo]: async ({ client }) => {
    const handle = await startEcho(client, 'recorded echo', { taskQueue: TASK_QUEUE, workflowId: 'echo-recorded' });
    await handle.result();
    return { workflowId: handle.workflowId };
  },
  // Parallel nodes, a gate answered (with a stale pauseId rejected first), a skipped node.
  [workflowTypes.dagRun]: async ({ runs }) => {
    const run = await runs.start(GATED);
    const pause = await runs.openPause(run.runId, 'gate');
    await run.handle.executeUpdate(respondUpdate, { args: [{ nodeId: 'gate', text: 'approve', pauseId: 'stale' }] }).catch(() => undefined);
    await run.handle.executeUpdate(respondUpdate, { args: [{ nodeId: 'gate', text: 'approve', pauseId: pause.pause_id }] });
    await run.handle.result();
    return { workflowId: run.handle.workflowId };
  },
  // The first execution of a run that continues as new while its gate is open…
  [`${workflowTypes.dagRun}-continuedAsNew`]: async ({ client, runs }) => {
    const run = await runs.start(CHAIN, { maxHistoryEvents: 25 });
    const pause = await runs.openPause(run.runId, 'gate');
    while ((await runs.nodes(run.runId)).find((n) => n.node_id === 'p3')!.status !== 'SUCCEEDED') await new Promise((r) => setTimeout(r, 50));
    await run.handle.executeUpdate(respondUpdate, { args: [{ nodeId: 'gate', text: 'approve', pauseId: pause.pause_id }] });
    await run.handle.result();
    const [first] = await firstAndLastExecution(client, run.handle.workflowId);
    return { workflowId: run.handle.workflowId, runId: first };
  },
  // …and the last execution of another, starting from carried state.
  [`${workflowTypes.dagRun}-continued`]: async ({ client, runs }) => {
    const run = await runs.start(CHAIN, { maxHistoryEvents: 25 });
    const pause = await runs.openPause(run.runId, 'gate');
    while ((await runs.nodes(run.runId)).find((n) => n.node_id === 'p3')!.status !== 'SUCCEEDED') await new Promise((r) => setTimeout(r, 50));
    await run.handle.executeUpdate(respondUpdate, { args: [{ nodeId: 'gate', text: 'approve', pauseId: pause.pause_id }] });
    await run.handle.result();
    const executions = await firstAndLastExecution(client, run.handle.workflowId);
    return { workflowId: run.handle.workflowId, runId: executions.at(-1) };
  },
  // A cancel reaching a running command.
  [`${workflowTypes.dagRun}-cancelled`]: async ({ runs }) => {
    const run = await runs.start(SLEEPER);
    while ((await runs.nodes(run.runId))[0]!.status !== 'RUNNING') await new Promise((r) => setTimeout(r, 50));
    await run.handle.cancel();
    await run.handle.result().catch(() => undefined);
    return { workflowId: run.handle.workflowId };
  },
  // The proof op with a steer.
  [workflowTypes.durableOp]: async ({ client, runs }) => {
    const opId = '00000000-0000-4000-8000-000000000001';
    const store = runs.opened.deps.ops!.store;
    const workflowId = opWorkflowId('countdown', opId);
    await store.createOp({ id: opId, kind: 'countdown', title: 'recorded', input: { steps: 4, intervalMs: 250 }, ribId: null, projectId: null, steerable: true, temporalWorkflowId: workflowId });
    const handle = await startOpWorkflow(client, { taskQueue: runs.taskQueue, workflowId, title: 'recorded', input: { opId, kind: 'countdown', heartbeatTimeoutMs: 3000 } });
    await new Promise((r) => setTimeout(r, 300));
    await handle.signal(steerSignal, 'keep going');
    await handle.result();
    return { workflowId };
  },
  // An op whose work runs in the opWork child, steered through the Update (once with a caller key, repeated).
  [`${workflowTypes.durableOp}-steered`]: async ({ client, runs }) => {
    const { workflowId } = await steeredOp(client, runs, '00000002-0000-4000-8000-000000000002');
    return { workflowId };
  },
  // That op's work child.
  [workflowTypes.opWork]: async ({ client, runs }) => {
    await steeredOp(client, runs, '00000003-0000-4000-8000-000000000003');
    return { workflowId: opWorkWorkflowId('00000003-0000-4000-8000-000000000003') };
  },
  // The first execution of an op that continues as new while it runs and is steered…
  [`${workflowTypes.durableOp}-continuedAsNew`]: async ({ client, runs }) => {
    const { workflowId } = await steeredOp(client, runs, '00000004-0000-4000-8000-000000000004', 20);
    const [first] = await firstAndLastExecution(client, workflowId);
    return { workflowId, runId: first };
  },
  // …and the last execution of another, from carried steers.
  [`${workflowTypes.durableOp}-continued`]: async ({ client, runs }) => {
    const { workflowId } = await steeredOp(client, runs, '00000005-0000-4000-8000-000000000005', 20);
    const executions = await firstAndLastExecution(client, workflowId);
    return { workflowId, runId: executions.at(-1) };
  },
};

/** A countdown op steered through the `steerNote` Update (the last note ends it), optionally continuing as new. */
async function steeredOp(client: Client, runs: RunHarness, opId: string, maxHistoryEvents?: number): Promise<{ workflowId: string }> {
  const store = runs.opened.deps.ops!.store;
  const workflowId = opWorkflowId('countdown', opId);
  await store.createOp({ id: opId, kind: 'countdown', title: 'recorded', input: { steps: 200, intervalMs: 100 }, ribId: null, projectId: null, steerable: true, temporalWorkflowId: workflowId });
  const handle = await startOpWorkflow(client, {
    taskQueue: runs.taskQueue,
    workflowId,
    title: 'recorded',
    input: { opId, kind: 'countdown', heartbeatTimeoutMs: 3000, ...(maxHistoryEvents ? { maxHistoryEvents } : {}) },
  });
  const notes = maxHistoryEvents ? ['one', 'two', 'three', 'four', 'five', 'six'] : ['keep going'];
  for (const note of notes) await handle.executeUpdate(opSteerUpdate, { args: [note], updateId: `${STEER_KEY_PREFIX}${note}` });
  await handle.executeUpdate(opSteerUpdate, { args: [notes[0]!], updateId: `${STEER_KEY_PREFIX}${notes[0]}` });
  await handle.executeUpdate(opSteerUpdate, { args: ['finish'] });
  await handle.result();
  await client.workflow.getHandle(opWorkWorkflowId(opId)).result();
  return { workflowId };
}

async function main(): Promise<void> {
  const target = await recordingTarget();
  const { address } = target;
  process.env[ADDRESS_ENV] = address;
  const worker = await startWorker({ address, taskQueue: TASK_QUEUE, activities: createActivities() });
  const client = await connectClient({ address });
  const runs = await RunHarness.start();
  try {
    await recordScenarios(client, { client, runs }, scenarios, target.wanted);
  } finally {
    await runs.stop();
    await client.connection.close();
    await worker.stop();
    await target.stop();
  }
}

runRecording(main);
