// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { ActivityCancellationType, ApplicationFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import { HOLDER_STOPPED } from '@keelson/schema';
import type { RibActivities } from '../activities/ribs/ribActivities';
import { runSteerableOp } from './steerableOp';

export interface RibOpInput {
  opId: string;
  kind: string;
  /** The registering process's own task queue: the holder activity runs there and nowhere else. */
  holderTaskQueue: string;
  /** Heartbeat timeout of the holder: a dead registering process is noticed within it. */
  heartbeatTimeoutMs: number;
  /** Longest the op may run. @default 24 hours */
  timeoutMs?: number;
}

export interface RibOpResult {
  opId: string;
  status: 'SUCCEEDED';
}

/**
 * A rib's durable op (`registerOp`). The rib works in the process that registered it; this workflow
 * makes the op durable and visible: `OP_STARTED` (written at registration, idempotent here), steers
 * as `OP_STEERED` frames in order, and one terminal status. The `holdRibOp` activity runs on the
 * registering process's own task queue while the rib works, so a cancel reaches `handle.signal` and
 * a process that died is noticed by its missing heartbeat: FAILED "registering process stopped".
 * Same `steer` Signal, `status` Query and cancellation as `durableOp`.
 */
export async function ribOp(input: RibOpInput): Promise<RibOpResult> {
  const holder = proxyActivities<RibActivities>({
    taskQueue: input.holderTaskQueue,
    // A process that died before picking the hold up is noticed too.
    scheduleToStartTimeout: Math.max(input.heartbeatTimeoutMs, 10_000),
    startToCloseTimeout: input.timeoutMs ?? 24 * 60 * 60 * 1000,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    // The work lives in one process: another attempt could not reach it.
    retry: { maximumAttempts: 1 },
  });
  return runSteerableOp({
    opId: input.opId,
    work: () => holder.holdRibOp({ opId: input.opId }),
    isCancelled: () => true,
    failure: (cause, err) => ({
      message:
        cause instanceof TimeoutFailure
          ? cause.timeoutType === 'HEARTBEAT'
            ? `${HOLDER_STOPPED}: no heartbeat from ${input.holderTaskQueue} within ${input.heartbeatTimeoutMs} ms`
            : cause.timeoutType === 'SCHEDULE_TO_START'
              ? `${HOLDER_STOPPED}: ${input.holderTaskQueue} never took the op up`
              : `op ${input.opId} timed out (${cause.timeoutType ?? 'unknown timeout'})`
          : cause instanceof Error
            ? cause.message
            : String(err),
      type: cause instanceof ApplicationFailure ? (cause.type ?? 'UPSTREAM_FAILED') : 'SERVICE_UNAVAILABLE',
    }),
  });
}
