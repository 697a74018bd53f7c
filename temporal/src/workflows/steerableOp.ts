// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The life of an op workflow (durableOp, ribOp): its handlers, the work (as the `opWork` child, or
// inline for older executions), the steers it records, continue-as-new, and its one terminal status.
// Its state is steerableOpState.ts.
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  ContinueAsNew,
  currentUpdateInfo,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { workflowKinds, type Actor, type OpSteerResult, type OpWorkOutcome } from '@keelson/schema';
import type { OpActivities } from '../activities/ops/opActivities';
import { searchAttributeKeys } from '../searchAttributeKeys';
import { cancelledBySignal, opStatusQuery, opSteerUpdate, steerSignal } from './messages';
import { describeWorkFailure, opWork, opWorkDoneSignal, opWorkWorkflowId, startWork, type OpWorkKind } from './opWork';
import { SteerableOpRun } from './steerableOpState';

const book = proxyActivities<OpActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT'] },
});

/** The patch that moved an op's work into the `opWork` child (older executions replay without it). */
export const OP_WORK_CHILD_PATCH = 'op-work-child';

/** Update ids with this prefix are a caller's key: remembered across continue-as-new so a retry is a duplicate. */
export const STEER_KEY_PREFIX = 'key:';

/** What an op workflow hands its next run when it continues as new. */
export interface CarriedOpState {
  /** Steers accepted so far (the next one's index). */
  accepted: number;
  /** Steers recorded as `OP_STEERED` frames so far. */
  delivered: number;
  /** Accepted steers not yet recorded, in order: index `delivered + i`. */
  pending: string[];
  /** Who sent each pending steer (same order; absent in runs carried before actors were). */
  pendingActors?: (Actor | null)[];
  /** Caller keys (update ids) of accepted steers → their index. */
  keys: Record<string, number>;
  /** The work's outcome, when it arrived during the hand-over. */
  outcome?: OpWorkOutcome;
  continuations: number;
}

/** One op workflow's own parts. */
export interface SteerableOp {
  opId: string;
  /** The activity doing or holding the work. */
  work: OpWorkKind;
  /** State from the previous run (continue-as-new). */
  carried?: CarriedOpState;
  /** Continue-as-new threshold (tests lower it). @default Temporal's suggestion only */
  maxHistoryEvents?: number;
  /** Continues the op workflow as new with `carried`. */
  continueAsNew(carried: CarriedOpState): Promise<never>;
}

/** Installs the op's steer, cancel-actor and status handlers. */
function handleOpMessages(run: SteerableOpRun): void {
  setHandler(steerSignal, (note: string) => run.signalled(note));
  setHandler(opSteerUpdate, (note: string, actor?: Actor | null): OpSteerResult => run.updated(note, actor ?? null, currentUpdateInfo()?.id, STEER_KEY_PREFIX), {
    validator: (note: string, _actor?: Actor | null) => run.validateUpdate(note, currentUpdateInfo()?.id),
  });
  setHandler(cancelledBySignal, (actor) => void (run.cancelledBy = actor));
  setHandler(opStatusQuery, () => run.statusView());
}

/** Records accepted steers in order; stops once the work is done and nothing waits, or at a hand-over. */
async function forwardSteers(run: SteerableOpRun): Promise<void> {
  for (;;) {
    await condition(() => run.queue.length > 0 || run.workDone || run.handingOver);
    if (run.handingOver) return;
    const next = run.nextSteer();
    if (!next) return;
    await book.recordSteer({ opId: run.opId, index: next.index, note: next.note, ...(next.actor ? { actor: next.actor } : {}) });
    run.steerRecorded();
  }
}

/** Records the steers in the background (its failure surfaces where it is awaited). */
function startForwarding(run: SteerableOpRun): Promise<void> {
  const forwarding = forwardSteers(run);
  forwarding.catch(() => undefined);
  return forwarding;
}

/** Settles the op FAILED (even if a cancel arrives now) and fails the workflow, non-retryable, with the work's error type. */
async function settleFailed(run: SteerableOpRun, failure: { message: string; type: string }): Promise<never> {
  run.status = 'FAILED';
  await CancellationScope.nonCancellable(() => book.settleOp({ opId: run.opId, status: 'FAILED', error: failure.message }));
  throw ApplicationFailure.create({ type: failure.type, message: failure.message, nonRetryable: true });
}

/** Settles the op CANCELLED by request (naming who asked) and rethrows the cancellation. */
async function settleCancelled(run: SteerableOpRun, err: unknown): Promise<never> {
  run.status = 'CANCELLED';
  await CancellationScope.nonCancellable(() => book.settleOp({ opId: run.opId, status: 'CANCELLED', error: 'cancelled by request', ...(run.cancelledBy ? { actor: run.cancelledBy } : {}) }));
  throw err;
}

/** Executions begun before the work child: the work activity runs here, and the op never continues. */
async function runWorkInline(run: SteerableOpRun, op: SteerableOp): Promise<{ opId: string; status: 'SUCCEEDED' }> {
  const { opId } = run;
  try {
    await book.beginOp({ opId });
    const forwarding = startForwarding(run);
    try {
      await startWork(op);
    } finally {
      run.workDone = true;
    }
    await forwarding;
    run.status = 'SUCCEEDED';
    return { opId, status: 'SUCCEEDED' };
  } catch (err) {
    if ((op.work.type === 'rib' || isCancellation(err)) && CancellationScope.current().consideredCancelled) return await settleCancelled(run, err);
    return await settleFailed(run, describeWorkFailure(op, err));
  }
}

/** Whether the history is long enough to hand over (Temporal suggests it, or the op's threshold is reached). */
function shouldHandOver(op: SteerableOp): boolean {
  const now = workflowInfo();
  return now.continueAsNewSuggested || (op.maxHistoryEvents !== undefined && now.historyLength >= op.maxHistoryEvents);
}

/** Begins the op and starts its work child (abandoned on close: the op may continue as new while it runs). */
async function beginWorkChild(run: SteerableOpRun, op: SteerableOp, childId: string): Promise<void> {
  const { opId } = run;
  const info = workflowInfo();
  await book.beginOp({ opId });
  await CancellationScope.nonCancellable(() =>
    startChild(opWork, {
      workflowId: childId,
      args: [{ opId, opWorkflowId: info.workflowId, work: op.work }],
      // The op may continue as new while the work runs; a cancel reaches the child below.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      typedSearchAttributes: [{ key: searchAttributeKeys.kind, value: workflowKinds.opWork }],
      memo: { opId },
    }),
  );
  run.childStarted = true;
}

/** The op's end by its work's outcome: SUCCEEDED, CANCELLED (its work was cancelled) or FAILED. */
async function settleOutcome(run: SteerableOpRun, ended: OpWorkOutcome): Promise<{ opId: string; status: 'SUCCEEDED' }> {
  const { opId } = run;
  if (ended.outcome === 'SUCCEEDED') {
    run.status = 'SUCCEEDED';
    return { opId, status: 'SUCCEEDED' };
  }
  if (ended.outcome === 'CANCELLED') {
    run.status = 'CANCELLED';
    await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'CANCELLED', error: 'its work was cancelled' }));
    throw ApplicationFailure.create({ type: 'CONFLICT', message: `op ${opId}: its work was cancelled`, nonRetryable: true });
  }
  return await settleFailed(run, ended);
}

/** A cancel of the op: the work child is cancelled and awaited (briefly); a work that succeeded meanwhile stands. */
async function cancelWorkChild(run: SteerableOpRun, op: SteerableOp, childId: string, err: unknown): Promise<{ opId: string; status: 'SUCCEEDED' }> {
  await CancellationScope.nonCancellable(async () => {
    if (run.childStarted && run.outcome === undefined) {
      try {
        await getExternalWorkflowHandle(childId).cancel();
      } catch {
        // Already closed: its outcome is on the way.
      }
      await condition(() => run.outcome !== undefined, op.work.heartbeatTimeoutMs * 3 + 60_000);
    }
  });
  run.workDone = true;
  if (run.outcome?.outcome === 'SUCCEEDED') {
    run.status = 'SUCCEEDED';
    return { opId: run.opId, status: 'SUCCEEDED' };
  }
  return await settleCancelled(run, err);
}

/** The op with its work as the `opWork` child: waits for the outcome, handing over to a new execution when due. */
async function runWorkChild(run: SteerableOpRun, op: SteerableOp): Promise<{ opId: string; status: 'SUCCEEDED' }> {
  const childId = opWorkWorkflowId(run.opId);
  setHandler(opWorkDoneSignal, (o: OpWorkOutcome) => {
    run.outcome ??= o;
  });
  try {
    if (!run.carried) await beginWorkChild(run, op, childId);
    const forwarding = startForwarding(run);
    await condition(() => run.outcome !== undefined || shouldHandOver(op));
    if (run.outcome === undefined) {
      run.handingOver = true;
      await forwarding;
      await condition(allHandlersFinished);
      return await op.continueAsNew(run.handOver());
    }
    run.workDone = true;
    await forwarding;
    return await settleOutcome(run, run.outcome);
  } catch (err) {
    // Handing over to the next run, or settled already (FAILED, or its work cancelled): it stands.
    if (err instanceof ContinueAsNew || run.status !== 'RUNNING') throw err;
    if (!isCancellation(err) || !CancellationScope.current().consideredCancelled) return await settleFailed(run, describeWorkFailure(op, err));
    return await cancelWorkChild(run, op, childId, err);
  }
}

/**
 * The life of a durable op, shared by `durableOp` and `ribOp`: `beginOp`; the work as the `opWork`
 * child; steers through the `steerNote` Update (validated: rejected once the op is finishing, when
 * `runLimits.steersPending` wait, or after `runLimits.steersPerOp`; a caller key deduplicates) or the
 * older `steer` Signal, recorded in order as `OP_STEERED` frames; the `status` Query; continue-as-new
 * before the history grows large, carrying the steers not yet recorded; one terminal status settled
 * even when cancelled (CANCELLED) or failed (FAILED, non-retryable, with the work's error type).
 * Executions begun before the `opWork` child ran the work activity themselves and never continue.
 */
export async function runSteerableOp(op: SteerableOp): Promise<{ opId: string; status: 'SUCCEEDED' }> {
  const run = new SteerableOpRun(op.opId, op.carried);
  handleOpMessages(run);
  if (!op.carried && !patched(OP_WORK_CHILD_PATCH)) return await runWorkInline(run, op);
  return await runWorkChild(run, op);
}
