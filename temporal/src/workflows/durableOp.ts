// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { ActivityCancellationType, ApplicationFailure, CancellationScope, condition, isCancellation, proxyActivities, setHandler, TimeoutFailure } from '@temporalio/workflow';
import type { DurableOpStatus, RunStatus } from '@keelson/schema';
import type { OpActivities } from '../activities/ops/opActivities';
import { opStatusQuery, steerSignal } from './messages';

export interface DurableOpInput {
  opId: string;
  /** The op kind (the worker's registry names its implementation). */
  kind: string;
  /** Heartbeat timeout of the op's activity: a lost worker or a cancel is noticed within it. */
  heartbeatTimeoutMs: number;
  /** Longest the op may run. @default 24 hours */
  timeoutMs?: number;
}

export interface DurableOpResult {
  opId: string;
  status: 'SUCCEEDED';
}

const book = proxyActivities<OpActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT'] },
});

/** How many times the op's activity is retried when its worker is lost (its own throw is final). */
const LOST_WORKER_RETRIES = 3;

/**
 * A durable long-running op: the implementation runs as one heartbeating activity; log/progress
 * frames and the terminal result land in the `ops` stream; cancellation reaches the implementation's
 * signal; steering notes arrive as the `steer` Signal and are forwarded, in order, as `OP_STEERED`
 * frames the running implementation follows.
 */
export async function durableOp(input: DurableOpInput): Promise<DurableOpResult> {
  const { opId } = input;
  const notes: string[] = [];
  let delivered = 0;
  let status: RunStatus = 'RUNNING';
  let workDone = false;

  setHandler(steerSignal, (note: string) => {
    if (status === 'RUNNING' && !workDone && typeof note === 'string') notes.push(note);
  });
  setHandler(opStatusQuery, (): DurableOpStatus => ({ opId, status, steersReceived: notes.length, steersDelivered: delivered }));

  const work = proxyActivities<OpActivities>({
    startToCloseTimeout: input.timeoutMs ?? 24 * 60 * 60 * 1000,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    // The op reports CANCELLED only after its implementation stopped.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 1 + LOST_WORKER_RETRIES, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED', 'UPSTREAM_FAILED'] },
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
      await work.runOp({ opId });
    } finally {
      workDone = true;
    }
    await forwarding;
    status = 'SUCCEEDED';
    return { opId, status: 'SUCCEEDED' };
  } catch (err) {
    if (isCancellation(err) && CancellationScope.current().consideredCancelled) {
      status = 'CANCELLED';
      await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'CANCELLED', error: 'cancelled by request' }));
      throw err;
    }
    let cause: unknown = err;
    while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
    const message =
      cause instanceof TimeoutFailure ? 'its worker was lost and retries ran out' : cause instanceof Error ? cause.message : String(err);
    const type = cause instanceof ApplicationFailure ? (cause.type ?? 'UPSTREAM_FAILED') : 'UPSTREAM_FAILED';
    status = 'FAILED';
    await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'FAILED', error: message }));
    throw ApplicationFailure.create({ type, message, nonRetryable: true });
  }
}
