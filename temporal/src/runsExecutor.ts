import { actorOf } from '@keelson/schema';
import { currentCaller } from '@keelson/service';
import { randomUUID } from 'node:crypto';
import type { LaunchOutcome, RunsExecutor } from '@keelson/runs';
import { errorCodeSchema, type TemporalTarget } from '@keelson/schema';
import {
  ApplicationFailure,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  type Client,
} from '@temporalio/client';
import { connectClient, workflowUiUrl } from './client';
import { opWorkflowId, runWorkflowId, startOpWorkflow, startRunWorkflow } from './runClient';
import { cancelledBySignal, opSteerUpdate, respondUpdate } from './workflows/messages';
import { STEER_KEY_PREFIX } from './workflows/steerableOp';
import { steerSwarmWorkflow } from './swarmsExecutor';

function isDeadline(err: unknown): boolean {
  const code = (err as { code?: number } | undefined)?.code;
  return code === 4 /* DEADLINE_EXCEEDED */ || /deadline/i.test((err as Error | undefined)?.message ?? '');
}

async function launched(start: () => Promise<{ firstExecutionRunId: string }>): Promise<LaunchOutcome> {
  try {
    const handle = await start();
    return { ok: true, executionId: handle.firstExecutionRunId };
  } catch (err) {
    return { ok: false, alreadyRunning: err instanceof WorkflowExecutionAlreadyStartedError, message: (err as Error).message };
  }
}

/** The runs domain's executor over a Temporal client: `dagRun` per run launch, `durableOp` per op. */
export function temporalRunsExecutor(client: Client, target: Omit<TemporalTarget, 'address'>): RunsExecutor {
  return {
    runWorkflowId,
    opWorkflowId,
    uiUrl: (workflowId) => (target.uiUrl ? workflowUiUrl(target.uiUrl, target.namespace, workflowId) : null),

    startRun: (req) =>
      launched(() =>
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
      launched(() =>
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

    async steerOp(op, note, key) {
      const handle = client.workflow.getHandle(op.workflowId);
      // A swarm's op is steered as the swarm is: through the swarm's own Update.
      if (op.kind === 'swarm') return steerSwarmWorkflow(handle, note, key);
      const updateId = key ? `${STEER_KEY_PREFIX}${key}` : randomUUID();
      try {
        // The caller rides along: the OP_STEERED frame the worker writes names them.
        const caller = currentCaller();
        await handle.executeUpdate(opSteerUpdate, { args: [note, caller ? actorOf(caller) : null], updateId });
        return { outcome: 'accepted' };
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return { outcome: 'not-running' };
        if (err instanceof WorkflowUpdateFailedError) {
          const cause = err.cause;
          const code = errorCodeSchema.safeParse(cause instanceof ApplicationFailure ? cause.type : undefined);
          return { outcome: 'failed', code: code.success ? code.data : 'CONFLICT', message: cause?.message ?? err.message };
        }
        throw err;
      }
    },
  };
}

/** Connects to Temporal and returns the runs executor over that connection; `close` ends it. */
export async function connectRunsExecutor(target: TemporalTarget): Promise<{ executor: RunsExecutor; close(): Promise<void> }> {
  const client = await connectClient({ address: target.address, namespace: target.namespace });
  return { executor: temporalRunsExecutor(client, target), close: () => client.connection.close() };
}
