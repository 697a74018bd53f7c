// What the executors (runs, ops, swarms) share when they call Temporal: a start's outcome and a steer's.
import { randomUUID } from 'node:crypto';
import type { LaunchOutcome } from '@keelson/runs';
import { errorCodeSchema, type ErrorCode } from '@keelson/schema';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { STEER_KEY_PREFIX } from './workflows/steerableOp';

/** Why a workflow did not take an Update: it does not run, or it failed the Update with a code. */
export type UpdateRefusal = { outcome: 'not-running' } | { outcome: 'failed'; code: ErrorCode; message: string };

/**
 * Sends one Update (an op's `opSteer`, a swarm's `swarmSteer`, a chat's `chatSend`) under an update id
 * made from the caller's key, so the same key is one Update however often sent; a workflow that does
 * not run is `not-running`, and an Update the workflow failed is `failed` with its error code
 * (CONFLICT unless it names one).
 */
export async function sendUpdate<T>(key: string | null, send: (updateId: string) => Promise<T>): Promise<T | UpdateRefusal> {
  const updateId = key ? `${STEER_KEY_PREFIX}${key}` : randomUUID();
  try {
    return await send(updateId);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { outcome: 'not-running' };
    if (err instanceof WorkflowUpdateFailedError) {
      const cause = err.cause;
      const code = errorCodeSchema.safeParse(cause instanceof ApplicationFailure ? cause.type : undefined);
      return { outcome: 'failed', code: code.success ? code.data : 'CONFLICT', message: cause?.message ?? err.message };
    }
    throw err;
  }
}

/** A workflow start as a launch outcome: its first execution's id, or why not (`alreadyRunning`: the id still runs). */
export async function launchOutcome(start: () => Promise<{ firstExecutionRunId: string }>): Promise<LaunchOutcome> {
  try {
    const handle = await start();
    return { ok: true, executionId: handle.firstExecutionRunId };
  } catch (err) {
    return { ok: false, alreadyRunning: err instanceof WorkflowExecutionAlreadyStartedError, message: (err as Error).message };
  }
}
