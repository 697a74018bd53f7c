// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { ActivityCancellationType, ApplicationFailure, CancellationScope, CancelledFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { HarnessTaskInput, HarnessTaskResult } from '@keelson/schema';
import type { Activities } from '../activities';

/** Codes no retry of a CLI turn can fix (the turn activities' `nonRetryableErrorTypes`). */
export const PERMANENT_TURN_FAILURES = ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED', 'FORBIDDEN', 'UNAUTHENTICATED', 'SERVICE_UNAVAILABLE'];

/**
 * A harness CLI run headless for a task (`workflowTypes.harnessTask`, id `harness-task-<taskId>`):
 * one turn as an activity that heartbeats and is cancellable, retried with backoff while an earlier
 * attempt still holds the task (TURN_IN_FLIGHT). Cancelling the workflow interrupts the turn at
 * once through the control plane (the CLI's process group is killed) and waits for the activity to
 * end. The task's status is settled exactly once, also when cancelled; a failed turn fails the
 * workflow.
 */
export async function harnessTask(input: HarnessTaskInput): Promise<HarnessTaskResult> {
  const { harnessTaskTurn } = proxyActivities<Activities>({
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: input.heartbeatTimeoutMs ?? 30_000,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '15 seconds', maximumAttempts: 10, nonRetryableErrorTypes: PERMANENT_TURN_FAILURES },
  });
  const { harnessTaskSettle, harnessTaskInterrupt } = proxyActivities<Activities>({ startToCloseTimeout: '1 minute', retry: { maximumAttempts: 10 } });

  let cancelled = false;
  CancellationScope.current().cancelRequested.catch(() => {
    cancelled = true;
    // A heartbeat response would carry the cancellation too, but only every few seconds.
    void CancellationScope.nonCancellable(() => harnessTaskInterrupt({ taskId: input.taskId })).catch(() => undefined);
  });
  const settleCancelled = () => CancellationScope.nonCancellable(() => harnessTaskSettle({ taskId: input.taskId, status: 'CANCELLED', error: 'the task was cancelled' }));

  let outcome: HarnessTaskResult;
  try {
    outcome = await harnessTaskTurn({ taskId: input.taskId });
  } catch (err) {
    if (isCancellation(err)) {
      await settleCancelled();
      throw err;
    }
    await harnessTaskSettle({ taskId: input.taskId, status: 'FAILED', error: err instanceof Error ? err.message : String(err) });
    throw err;
  }
  if (cancelled && outcome.status === 'INTERRUPTED') {
    await settleCancelled();
    throw new CancelledFailure(`task ${input.taskId} cancelled`);
  }
  await CancellationScope.nonCancellable(() => harnessTaskSettle({ taskId: input.taskId, status: outcome.status, result: outcome.result, error: outcome.error }));
  if (outcome.status !== 'COMPLETED') {
    throw ApplicationFailure.create({ type: 'UPSTREAM_FAILED', message: `the ${input.harnessId} turn ended ${outcome.status}: ${outcome.error ?? 'no detail'}`, nonRetryable: true });
  }
  return outcome;
}
