// Records the event histories of the `harnessTask` workflow into temporal/histories/, for
// replay.int.test.ts: a task that succeeds, one whose turn fails, and one cancelled mid-turn. The
// control plane is a stand-in (the workflow only sees its activities' results), so no CLI runs.
// Re-record only on purpose: a history is the contract that deployed runs hold us to.
//   node -r ./scripts/register.js temporal/scripts/recordHarnessHistories.ts [--address host:port] [--only <name>]
import { MeshError, workflowKinds, workflowTypes, type HarnessTaskInput, type SessionSteerInput } from '@keelson/schema';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { connectClient, createActivities, searchAttributeKeys, sessionSteerUpdate, startWorker } from '../src';
import type { HarnessTaskPlane } from '../src/activities';
import { recordingTarget, runRecording, writeHistory } from './recording';

const TASK_QUEUE = 'record-harness-histories';

/** Task ids decide the stand-in's outcome: `ok-…` completes, `fail-…` fails, `slow-…` runs until cancelled. */
const busyOnce = new Set<string>();
const plane: HarnessTaskPlane = {
  async runTaskTurn(taskId, ctl) {
    const sessionId = 'claude-code:6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
    if (taskId.startsWith('slow-')) {
      await new Promise<void>((resolve) => {
        const beat = setInterval(() => ctl.heartbeat({ sessionId }), 200);
        ctl.signal.addEventListener('abort', () => {
          clearInterval(beat);
          resolve();
        });
      });
      return { sessionId, turnId: 't-slow', status: 'INTERRUPTED', result: null, error: 'interrupted' };
    }
    if (taskId.startsWith('fail-')) return { sessionId, turnId: 't-fail', status: 'FAILED', result: null, error: 'the CLI exited with 1' };
    return { sessionId, turnId: 't-ok', status: 'COMPLETED', result: 'DONE notes/a.txt', error: null };
  },
  async settleTask() {
    return null;
  },
  async interruptTask() {
    return true;
  },
  /** A steer's first attempt finds the session busy (TURN_IN_FLIGHT, retried), the second runs it. */
  async runSteerTurn(input) {
    const sessionId = 'pi:3a2b1c0d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    if (!busyOnce.has(input.steerId)) {
      busyOnce.add(input.steerId);
      throw new MeshError('TURN_IN_FLIGHT', `session ${sessionId} has a turn in flight`);
    }
    return { sessionId, turnId: input.steerId, status: 'COMPLETED', result: `ECHO ${input.text}`, error: null };
  },
};

async function main(): Promise<void> {
  const { address, wanted, stop } = await recordingTarget();
  const worker = await startWorker({ address, taskQueue: TASK_QUEUE, activities: createActivities({ harness: { plane } }) });
  const client = await connectClient({ address });
  try {
    for (const [name, taskId] of [
      ['harnessTask', 'ok-1'],
      ['harnessTask-failed', 'fail-1'],
      ['harnessTask-cancelled', 'slow-1'],
    ] as const) {
      if (!wanted(name)) continue;
      const input: HarnessTaskInput = { taskId, harnessId: 'claude-code', projectId: '7d3f1c2a-9b8e-4f6d-a5c4-3b2a1f0e9d8c', heartbeatTimeoutMs: 10_000 };
      const handle = await client.workflow.start(workflowTypes.harnessTask, {
        taskQueue: TASK_QUEUE,
        workflowId: `record-${name}-${Date.now()}`,
        args: [input],
        typedSearchAttributes: [
          { key: searchAttributeKeys.kind, value: workflowKinds.task },
          { key: searchAttributeKeys.harness, value: input.harnessId },
          { key: searchAttributeKeys.project, value: input.projectId! },
        ],
      });
      if (taskId.startsWith('slow-')) {
        await new Promise((r) => setTimeout(r, 1000));
        await handle.cancel();
      }
      await handle.result().catch(() => undefined);
      await writeHistory(name, await handle.fetchHistory());
    }
    if (wanted('sessionSteer')) await recordSessionSteer(client);
  } finally {
    await client.connection.close();
    await worker.stop();
    await stop();
  }
}

/** A session's steer queue: two steers, each first refused TURN_IN_FLIGHT, then run in order; the drained queue ends after its idle wait (a minute). */
async function recordSessionSteer(client: Awaited<ReturnType<typeof connectClient>>): Promise<void> {
  const steerInput: SessionSteerInput = { sessionId: 'pi:3a2b1c0d-4e5f-4a6b-8c7d-9e0f1a2b3c4d', harnessId: 'pi', heartbeatTimeoutMs: 10_000 };
  const workflowId = `record-sessionSteer-${Date.now()}`;
  for (const text of ['steer one', 'steer two']) {
    const start = new WithStartWorkflowOperation(workflowTypes.sessionSteer, {
      taskQueue: TASK_QUEUE,
      workflowId,
      args: [steerInput],
      workflowIdConflictPolicy: 'USE_EXISTING',
      typedSearchAttributes: [
        { key: searchAttributeKeys.kind, value: workflowKinds.steer },
        { key: searchAttributeKeys.harness, value: steerInput.harnessId },
      ],
    });
    await client.workflow.executeUpdateWithStart(sessionSteerUpdate, { args: [{ text }], updateId: `record-${text}`, startWorkflowOperation: start });
  }
  const steered = client.workflow.getHandle(workflowId);
  await steered.result();
  await writeHistory('sessionSteer', await steered.fetchHistory());
}

runRecording(main);
