// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { ActivityCancellationType, ApplicationFailure, CancellationScope, condition, proxyActivities, setHandler, TimeoutFailure } from '@temporalio/workflow';
import { HOLDER_STOPPED, type DurableOpStatus, type RunStatus } from '@keelson/schema';
import type { OpActivities } from '../activities/ops/opActivities';
import type { RibActivities } from '../activities/ribs/ribActivities';
import { opStatusQuery, steerSignal } from './messages';

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

const book = proxyActivities<OpActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT'] },
});

/**
 * A rib's durable op (`registerOp`). The rib works in the process that registered it; this workflow
 * makes the op durable and visible: `OP_STARTED` (written at registration, idempotent here), steers
 * as `OP_STEERED` frames in order, and one terminal status. The `holdRibOp` activity runs on the
 * registering process's own task queue while the rib works, so a cancel reaches `handle.signal` and
 * a process that died is noticed by its missing heartbeat: FAILED "registering process stopped".
 * Same `steer` Signal, `status` Query and cancellation as `durableOp`.
 */
export async function ribOp(input: RibOpInput): Promise<RibOpResult> {
  const { opId } = input;
  const notes: string[] = [];
  let delivered = 0;
  let status: RunStatus = 'RUNNING';
  let workDone = false;

  setHandler(steerSignal, (note: string) => {
    if (status === 'RUNNING' && !workDone && typeof note === 'string') notes.push(note);
  });
  setHandler(opStatusQuery, (): DurableOpStatus => ({ opId, status, steersReceived: notes.length, steersDelivered: delivered }));

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

  try {
    await book.beginOp({ opId });
    const forwarding = (async () => {
      for (;;) {
        await condition(() => delivered < notes.length || workDone);
        if (delivered >= notes.length) return;
        await book.recordSteer({ opId, index: delivered, note: notes[delivered]! });
        delivered += 1;
      }
    })();
    forwarding.catch(() => undefined);
    try {
      await holder.holdRibOp({ opId });
    } finally {
      workDone = true;
    }
    await forwarding;
    status = 'SUCCEEDED';
    return { opId, status: 'SUCCEEDED' };
  } catch (err) {
    if (CancellationScope.current().consideredCancelled) {
      status = 'CANCELLED';
      await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'CANCELLED', error: 'cancelled by request' }));
      throw err;
    }
    let cause: unknown = err;
    while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
    const message =
      cause instanceof TimeoutFailure
        ? cause.timeoutType === 'HEARTBEAT'
          ? `${HOLDER_STOPPED}: no heartbeat from ${input.holderTaskQueue} within ${input.heartbeatTimeoutMs} ms`
          : cause.timeoutType === 'SCHEDULE_TO_START'
            ? `${HOLDER_STOPPED}: ${input.holderTaskQueue} never took the op up`
            : `op ${opId} timed out (${cause.timeoutType ?? 'unknown timeout'})`
        : cause instanceof Error
          ? cause.message
          : String(err);
    const type = cause instanceof ApplicationFailure ? (cause.type ?? 'UPSTREAM_FAILED') : 'SERVICE_UNAVAILABLE';
    status = 'FAILED';
    await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'FAILED', error: message }));
    throw ApplicationFailure.create({ type, message, nonRetryable: true });
  }
}
