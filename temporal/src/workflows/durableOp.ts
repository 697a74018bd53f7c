// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { ActivityCancellationType, ApplicationFailure, isCancellation, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { OpActivities } from '../activities/ops/opActivities';
import { runSteerableOp } from './steerableOp';

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

/** How many times the op's activity is retried when its worker is lost (its own throw is final). */
const LOST_WORKER_RETRIES = 3;

/**
 * A durable long-running op: the implementation runs as one heartbeating activity; log/progress
 * frames and the terminal result land in the `ops` stream; cancellation reaches the implementation's
 * signal; steering notes arrive as the `steer` Signal and are forwarded, in order, as `OP_STEERED`
 * frames the running implementation follows.
 */
export async function durableOp(input: DurableOpInput): Promise<DurableOpResult> {
  const work = proxyActivities<OpActivities>({
    startToCloseTimeout: input.timeoutMs ?? 24 * 60 * 60 * 1000,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    // The op reports CANCELLED only after its implementation stopped.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 1 + LOST_WORKER_RETRIES, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED', 'UPSTREAM_FAILED'] },
  });
  return runSteerableOp({
    opId: input.opId,
    work: () => work.runOp({ opId: input.opId }),
    isCancelled: isCancellation,
    failure: (cause, err) => ({
      message: cause instanceof TimeoutFailure ? 'its worker was lost and retries ran out' : cause instanceof Error ? cause.message : String(err),
      type: cause instanceof ApplicationFailure ? (cause.type ?? 'UPSTREAM_FAILED') : 'UPSTREAM_FAILED',
    }),
  });
}
