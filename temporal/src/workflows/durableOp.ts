// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { continueAsNew } from '@temporalio/workflow';
import { runSteerableOp, type CarriedOpState } from './steerableOp';

export interface DurableOpInput {
  opId: string;
  /** The op kind (the worker's registry names its implementation). */
  kind: string;
  /** Heartbeat timeout of the op's activity: a lost worker or a cancel is noticed within it. */
  heartbeatTimeoutMs: number;
  /** Longest the op may run. @default 24 hours */
  timeoutMs?: number;
  /** Continue-as-new threshold (tests lower it). @default Temporal's suggestion only */
  maxHistoryEvents?: number;
  /** Steers and the like from the previous run (continue-as-new). */
  carried?: CarriedOpState;
}

export interface DurableOpResult {
  opId: string;
  status: 'SUCCEEDED';
}

/**
 * A durable long-running op: the implementation runs as one heartbeating activity (in the `opWork`
 * child); log/progress frames and the terminal result land in the `ops` stream; cancellation reaches
 * the implementation's signal; steering notes arrive as the `steerNote` Update (or the older `steer`
 * Signal) and are recorded, in order, as `OP_STEERED` frames the running implementation follows; the
 * op continues as new before its history grows large.
 */
export async function durableOp(input: DurableOpInput): Promise<DurableOpResult> {
  return runSteerableOp({
    opId: input.opId,
    work: { type: 'durable', heartbeatTimeoutMs: input.heartbeatTimeoutMs, ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}) },
    ...(input.carried ? { carried: input.carried } : {}),
    ...(input.maxHistoryEvents !== undefined ? { maxHistoryEvents: input.maxHistoryEvents } : {}),
    continueAsNew: (carried) => continueAsNew<typeof durableOp>({ ...input, carried }),
  });
}
