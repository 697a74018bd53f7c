// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  defineSignal,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  TimeoutFailure,
} from '@temporalio/workflow';
import { HOLDER_STOPPED, opMessages, type OpWorkOutcome } from '@keelson/schema';
import type { OpActivities } from '../activities/ops/opActivities';
import type { RibActivities } from '../activities/ribs/ribActivities';

/** Signal `opWorkDone`: the work child tells its op workflow (whatever run is current) how the work ended. */
export const opWorkDoneSignal = defineSignal<[OpWorkOutcome]>(opMessages.workDone);

/** What the work is: an op implementation on a worker (`durableOp`), or a rib's hold in its registering process (`ribOp`). */
export type OpWorkKind =
  | { type: 'durable'; heartbeatTimeoutMs: number; timeoutMs?: number }
  | { type: 'rib'; holderTaskQueue: string; heartbeatTimeoutMs: number; timeoutMs?: number };

export interface OpWorkInput {
  opId: string;
  /** The op workflow's id (not run id): the outcome reaches its current run, across continue-as-new. */
  opWorkflowId: string;
  work: OpWorkKind;
}

/** How many times a durable op's activity is retried when its worker is lost (its own throw is final). */
const LOST_WORKER_RETRIES = 3;

function causeOf(err: unknown): unknown {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  return cause;
}

/** The FAILED message and type of a work activity's failure, as `durableOp` and `ribOp` have always read them. */
export function describeWorkFailure(input: { opId: string; work: OpWorkKind }, err: unknown): { message: string; type: string } {
  const cause = causeOf(err);
  const { work } = input;
  if (work.type === 'durable') {
    return {
      message: cause instanceof TimeoutFailure ? 'its worker was lost and retries ran out' : cause instanceof Error ? cause.message : String(err),
      type: cause instanceof ApplicationFailure ? (cause.type ?? 'UPSTREAM_FAILED') : 'UPSTREAM_FAILED',
    };
  }
  return {
    message:
      cause instanceof TimeoutFailure
        ? cause.timeoutType === 'HEARTBEAT'
          ? `${HOLDER_STOPPED}: no heartbeat from ${work.holderTaskQueue} within ${work.heartbeatTimeoutMs} ms`
          : cause.timeoutType === 'SCHEDULE_TO_START'
            ? `${HOLDER_STOPPED}: ${work.holderTaskQueue} never took the op up`
            : `op ${input.opId} timed out (${cause.timeoutType ?? 'unknown timeout'})`
        : cause instanceof Error
          ? cause.message
          : String(err),
    type: cause instanceof ApplicationFailure ? (cause.type ?? 'UPSTREAM_FAILED') : 'SERVICE_UNAVAILABLE',
  };
}

/** Starts the work activity the op's kind names. */
export function startWork(input: { opId: string; work: OpWorkKind }): Promise<unknown> {
  const { work, opId } = input;
  if (work.type === 'durable') {
    const acts = proxyActivities<OpActivities>({
      startToCloseTimeout: work.timeoutMs ?? 24 * 60 * 60 * 1000,
      heartbeatTimeout: work.heartbeatTimeoutMs,
      // The op reports CANCELLED only after its implementation stopped.
      cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
      retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 1 + LOST_WORKER_RETRIES, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED', 'UPSTREAM_FAILED'] },
    });
    return acts.runOp({ opId });
  }
  const holder = proxyActivities<RibActivities>({
    taskQueue: work.holderTaskQueue,
    // A process that died before picking the hold up is noticed too.
    scheduleToStartTimeout: Math.max(work.heartbeatTimeoutMs, 10_000),
    startToCloseTimeout: work.timeoutMs ?? 24 * 60 * 60 * 1000,
    heartbeatTimeout: work.heartbeatTimeoutMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    // The work lives in one process: another attempt could not reach it.
    retry: { maximumAttempts: 1 },
  });
  return holder.holdRibOp({ opId });
}

/**
 * The work of a steerable op as a child workflow (`op-work-<op id>`, abandoned on the op's
 * close so the op can continue as new while it runs): the one activity that does or holds the work,
 * then its outcome signalled to the op workflow's current run. Cancelling it cancels the activity.
 */
export async function opWork(input: OpWorkInput): Promise<OpWorkOutcome> {
  let outcome: OpWorkOutcome;
  try {
    await startWork(input);
    outcome = { outcome: 'SUCCEEDED' };
  } catch (err) {
    if (isCancellation(err) && CancellationScope.current().consideredCancelled) outcome = { outcome: 'CANCELLED' };
    else outcome = { outcome: 'FAILED', ...describeWorkFailure(input, err) };
  }
  await CancellationScope.nonCancellable(async () => {
    try {
      await getExternalWorkflowHandle(input.opWorkflowId).signal(opWorkDoneSignal, outcome);
    } catch {
      // The op workflow is gone (terminated): nobody is left to tell.
    }
  });
  return outcome;
}

/** The work child's workflow id: `op-work-<op id>` (from the op, not the parent's id, so replays under any id match). */
export function opWorkWorkflowId(opId: string): string {
  return `op-work-${opId}`;
}
