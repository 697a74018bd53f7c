// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { ApplicationFailure, CancellationScope, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { DurableOpStatus, RunStatus } from '@keelson/schema';
import type { OpActivities } from '../activities/ops/opActivities';
import { opStatusQuery, steerSignal } from './messages';

const book = proxyActivities<OpActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT'] },
});

/** One op workflow's own parts: the activity that does (or holds) the work, and how its end reads. */
export interface SteerableOp {
  opId: string;
  /** The activity doing or holding the work; resolves when it is done. */
  work(): Promise<unknown>;
  /** Whether `err`, thrown by the work while this workflow is cancelled, is that cancellation. */
  isCancelled(err: unknown): boolean;
  /** The FAILED message and error type for `cause`, the innermost cause of what the work threw. */
  failure(cause: unknown, err: unknown): { message: string; type: string };
}

/**
 * The life of a durable op, shared by `durableOp` and `ribOp`: `beginOp`; the `steer` Signal's notes
 * forwarded in order as `OP_STEERED` frames while the work runs; the `status` Query; one terminal
 * status settled even when cancelled (CANCELLED) or failed (FAILED, non-retryable, with the type
 * `failure` names).
 */
export async function runSteerableOp(op: SteerableOp): Promise<{ opId: string; status: 'SUCCEEDED' }> {
  const { opId } = op;
  const notes: string[] = [];
  let delivered = 0;
  let status: RunStatus = 'RUNNING';
  let workDone = false;

  setHandler(steerSignal, (note: string) => {
    if (status === 'RUNNING' && !workDone && typeof note === 'string') notes.push(note);
  });
  setHandler(opStatusQuery, (): DurableOpStatus => ({ opId, status, steersReceived: notes.length, steersDelivered: delivered }));

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
      await op.work();
    } finally {
      workDone = true;
    }
    await forwarding;
    status = 'SUCCEEDED';
    return { opId, status: 'SUCCEEDED' };
  } catch (err) {
    if (op.isCancelled(err) && CancellationScope.current().consideredCancelled) {
      status = 'CANCELLED';
      await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'CANCELLED', error: 'cancelled by request' }));
      throw err;
    }
    let cause: unknown = err;
    while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
    const { message, type } = op.failure(cause, err);
    status = 'FAILED';
    await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'FAILED', error: message }));
    throw ApplicationFailure.create({ type, message, nonRetryable: true });
  }
}
