// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { continueAsNew } from '@temporalio/workflow';
import { runSteerableOp, type CarriedOpState } from './steerableOp';

export interface RibOpInput {
  opId: string;
  kind: string;
  /** The registering process's own task queue: the holder activity runs there and nowhere else. */
  holderTaskQueue: string;
  /** Heartbeat timeout of the holder: a dead registering process is noticed within it. */
  heartbeatTimeoutMs: number;
  /** Longest the op may run. @default 24 hours */
  timeoutMs?: number;
  /** Continue-as-new threshold (tests lower it). @default Temporal's suggestion only */
  maxHistoryEvents?: number;
  /** Steers and the like from the previous run (continue-as-new). */
  carried?: CarriedOpState;
}

export interface RibOpResult {
  opId: string;
  status: 'SUCCEEDED';
}

/**
 * A rib's durable op (`registerOp`). The rib works in the process that registered it; this workflow
 * makes the op durable and visible: `OP_STARTED` (written at registration, idempotent here), steers
 * as `OP_STEERED` frames in order, and one terminal status. The `holdRibOp` activity (in the `opWork`
 * child) runs on the registering process's own task queue while the rib works, so a cancel reaches
 * `handle.signal` and a process that died is noticed by its missing heartbeat: FAILED "registering
 * process stopped". Same `steerNote` Update, `status` Query, cancellation and continue-as-new as
 * `durableOp`.
 */
export async function ribOp(input: RibOpInput): Promise<RibOpResult> {
  return runSteerableOp({
    opId: input.opId,
    work: {
      type: 'rib',
      holderTaskQueue: input.holderTaskQueue,
      heartbeatTimeoutMs: input.heartbeatTimeoutMs,
      ...(input.timeoutMs !== undefined ? { timeoutMs: input.timeoutMs } : {}),
    },
    ...(input.carried ? { carried: input.carried } : {}),
    ...(input.maxHistoryEvents !== undefined ? { maxHistoryEvents: input.maxHistoryEvents } : {}),
    continueAsNew: (carried) => continueAsNew<typeof ribOp>({ ...input, carried }),
  });
}
