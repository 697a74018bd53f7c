import { actorOf } from '@keelson/schema';
import { currentCaller } from '@keelson/service';
import type { RunsExecutor, SteerOutcome } from '@keelson/runs';
import type { TemporalTarget } from '@keelson/schema';
import {
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
} from '@temporalio/client';
import { connectClient, workflowUiUrl } from './client';
import { opWorkflowId, runWorkflowId, startOpWorkflow, startRunWorkflow } from './runClient';
import { cancelledBySignal, nodeSteerUpdate, opSteerUpdate, respondUpdate } from './workflows/messages';
import { launchOutcome, sendUpdate } from './executorCalls';
import { steerSwarmWorkflow } from './swarmsExecutor';

function isDeadline(err: unknown): boolean {
  const code = (err as { code?: number } | undefined)?.code;
  return code === 4 /* DEADLINE_EXCEEDED */ || /deadline/i.test((err as Error | undefined)?.message ?? '');
}

/** The runs domain's executor over a Temporal client: `dagRun` per run launch, `durableOp` per op. */
export function temporalRunsExecutor(client: Client, target: Omit<TemporalTarget, 'address'>): RunsExecutor {
  return {
    runWorkflowId,
    opWorkflowId,
    uiUrl: (workflowId) => (target.uiUrl ? workflowUiUrl(target.uiUrl, target.namespace, workflowId) : null),
    ...runsLaunchCalls(client, target),
    ...runsControlCalls(client),
    ...runsSteerCalls(client),
  };
}

/** Starting a run launch's `dagRun` and an op's `durableOp` on the target's task queue. */
function runsLaunchCalls(client: Client, target: Omit<TemporalTarget, 'address'>): Pick<RunsExecutor, 'startRun' | 'startOp'> {
  return {
    startRun: (req) =>
      launchOutcome(() =>
        startRunWorkflow(client, {
          taskQueue: target.taskQueue,
          workflowId: req.workflowId,
          workflowName: req.workflowName,
          title: req.title,
          project: req.project,
          rib: req.rib,
          startedBy: req.startedBy ?? null,
          input: {
            runId: req.runId,
            launch: req.launch,
            heartbeatTimeoutMs: req.heartbeatTimeoutMs,
            ...(req.maxHistoryEvents ? { maxHistoryEvents: req.maxHistoryEvents } : {}),
          },
        }),
      ),

    startOp: (req) =>
      launchOutcome(() =>
        startOpWorkflow(client, {
          taskQueue: target.taskQueue,
          workflowId: req.workflowId,
          title: req.title,
          rib: req.rib,
          project: req.project,
          input: {
            opId: req.opId,
            kind: req.kind,
            heartbeatTimeoutMs: req.heartbeatTimeoutMs,
            ...(req.maxHistoryEvents ? { maxHistoryEvents: req.maxHistoryEvents } : {}),
          },
        }),
      ),
  };
}

/** A gate's answer (an Update), a cancel (who asked, first), and waiting for a workflow to close. */
function runsControlCalls(client: Client): Pick<RunsExecutor, 'answerGate' | 'cancel' | 'closed'> {
  return {
    async answerGate(workflowId, answer, opts) {
      try {
        const result = await client.withDeadline(Date.now() + opts.timeoutMs, () =>
          client.workflow.getHandle(workflowId).executeUpdate(respondUpdate, { args: [answer], ...(opts.updateId ? { updateId: opts.updateId } : {}) }),
        );
        return { outcome: 'answered', result };
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError) return { outcome: 'rejected', reason: (err.cause as Error | undefined)?.message ?? err.message };
        if (err instanceof WorkflowNotFoundError) return { outcome: 'not-running' };
        if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError || isDeadline(err)) return { outcome: 'timed-out' };
        throw err;
      }
    },

    async cancel(workflowId) {
      try {
        const handle = client.workflow.getHandle(workflowId);
        // Who cancels, first: the workflow's CANCELLED frame names them (workflows without the
        // handler, such as a swarm's, ignore it).
        const caller = currentCaller();
        if (caller) await handle.signal(cancelledBySignal, actorOf(caller));
        await handle.cancel();
        return true;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      }
    },

    async closed(workflowId, timeoutMs) {
      const handle = client.workflow.getHandle(workflowId);
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        try {
          const { status } = await handle.describe();
          if (status.name !== 'RUNNING') return true;
        } catch (err) {
          if (err instanceof WorkflowNotFoundError) return true;
          throw err;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
      return false;
    },
  };
}

/** Steering an op or a node through its workflow's Update (a swarm's op through the swarm's own). */
function runsSteerCalls(client: Client): Pick<RunsExecutor, 'steerOp' | 'steerNode'> {
  return {
    async steerOp(op, note, key) {
      const handle = client.workflow.getHandle(op.workflowId);
      // A swarm's op is steered as the swarm is: through the swarm's own Update.
      if (op.kind === 'swarm') return steerSwarmWorkflow(handle, note, key);
      // The caller rides along: the OP_STEERED frame the worker writes names them.
      const caller = currentCaller();
      return sendUpdate<SteerOutcome>(key, async (updateId) => {
        await handle.executeUpdate(opSteerUpdate, { args: [note, caller ? actorOf(caller) : null], updateId });
        return { outcome: 'accepted' };
      });
    },

    async steerNode(workflowId, nodeId, note, key) {
      const handle = client.workflow.getHandle(workflowId);
      return sendUpdate<SteerOutcome>(key, async (updateId) => {
        await handle.executeUpdate(nodeSteerUpdate, { args: [{ nodeId, note }], updateId });
        return { outcome: 'accepted' };
      });
    },
  };
}

/** Connects to Temporal and returns the runs executor over that connection; `close` ends it. */
export async function connectRunsExecutor(target: TemporalTarget): Promise<{ executor: RunsExecutor; close(): Promise<void> }> {
  const client = await connectClient({ address: target.address, namespace: target.namespace });
  return { executor: temporalRunsExecutor(client, target), close: () => client.connection.close() };
}
