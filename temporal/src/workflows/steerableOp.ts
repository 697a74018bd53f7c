// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
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
import { runLimits, workflowKinds, type Actor, type DurableOpStatus, type OpSteerResult, type OpWorkOutcome, type RunStatus } from '@keelson/schema';
import type { OpActivities } from '../activities/ops/opActivities';
import { searchAttributeKeys } from '../searchAttributeKeys';
import { cancelledBySignal, opStatusQuery, opSteerUpdate, steerSignal } from './messages';
import { describeWorkFailure, opWork, opWorkDoneSignal, opWorkWorkflowId, startWork, type OpWorkKind } from './opWork';

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
  const { opId, carried } = op;
  const queue: string[] = [...(carried?.pending ?? [])];
  // Who sent each queued note (the caller the Update carried; null for a Signal), recorded as the frame's actor.
  const senders: (Actor | null)[] = queue.map((_, i) => carried?.pendingActors?.[i] ?? null);
  const keys = new Map<string, number>(Object.entries(carried?.keys ?? {}));
  let accepted = carried?.accepted ?? 0;
  let delivered = carried?.delivered ?? 0;
  let status: RunStatus = 'RUNNING';
  let workDone = false;
  let handingOver = false;

  const take = (note: string, actor: Actor | null = null): number => {
    queue.push(note);
    senders.push(actor);
    return accepted++;
  };
  const refusal = (note: unknown): ApplicationFailure | undefined => {
    if (typeof note !== 'string' || !note.trim()) return ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: 'the note is empty', nonRetryable: true });
    if (status !== 'RUNNING' || workDone) return ApplicationFailure.create({ type: 'CONFLICT', message: `op ${opId} has finished; a finished op cannot be steered`, nonRetryable: true });
    return undefined;
  };
  setHandler(steerSignal, (note: string) => {
    if (!refusal(note) && queue.length < runLimits.steersPending && accepted < runLimits.steersPerOp) take(note);
  });
  setHandler(
    opSteerUpdate,
    (note: string, actor?: Actor | null): OpSteerResult => {
      const key = currentUpdateInfo()?.id;
      const known = key === undefined ? undefined : keys.get(key);
      if (known !== undefined) return { index: known, duplicate: true };
      const index = take(note, actor ?? null);
      if (key?.startsWith(STEER_KEY_PREFIX)) keys.set(key, index);
      return { index, duplicate: false };
    },
    {
      validator: (note: string, _actor?: Actor | null) => {
        const refused = refusal(note);
        if (refused) throw refused;
        const key = currentUpdateInfo()?.id;
        if (key !== undefined && keys.has(key)) return;
        if (accepted >= runLimits.steersPerOp) {
          throw ApplicationFailure.create({ type: 'CONFLICT', message: `op ${opId} took its ${runLimits.steersPerOp} steers; it accepts no more`, nonRetryable: true });
        }
        if (queue.length >= runLimits.steersPending) {
          throw ApplicationFailure.create({ type: 'CONFLICT', message: `op ${opId} has ${queue.length} steers waiting to be delivered (at most ${runLimits.steersPending}); steer again once they are`, nonRetryable: true });
        }
      },
    },
  );
  // Who asks for the cancel that follows (the executor signals it first): the CANCELLED frame names them.
  let cancelledBy: Actor | undefined;
  setHandler(cancelledBySignal, (actor) => void (cancelledBy = actor));
  setHandler(opStatusQuery, (): DurableOpStatus => ({ opId, status, steersReceived: accepted, steersDelivered: delivered }));

  // Records accepted steers in order; stops once the work is done and nothing waits, or at a hand-over.
  const forward = async (): Promise<void> => {
    for (;;) {
      await condition(() => queue.length > 0 || workDone || handingOver);
      if (handingOver || queue.length === 0) return;
      const actor = senders[0] ?? null;
      await book.recordSteer({ opId, index: delivered, note: queue[0]!, ...(actor ? { actor } : {}) });
      queue.shift();
      senders.shift();
      delivered += 1;
    }
  };
  const settleFailed = async (failure: { message: string; type: string }): Promise<never> => {
    status = 'FAILED';
    await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'FAILED', error: failure.message }));
    throw ApplicationFailure.create({ type: failure.type, message: failure.message, nonRetryable: true });
  };

  if (!carried && !patched(OP_WORK_CHILD_PATCH)) {
    // Executions begun before the work child: the work activity runs here.
    try {
      await book.beginOp({ opId });
      const forwarding = forward();
      forwarding.catch(() => undefined);
      try {
        await startWork(op);
      } finally {
        workDone = true;
      }
      await forwarding;
      status = 'SUCCEEDED';
      return { opId, status: 'SUCCEEDED' };
    } catch (err) {
      if ((op.work.type === 'rib' || isCancellation(err)) && CancellationScope.current().consideredCancelled) {
        status = 'CANCELLED';
        await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'CANCELLED', error: 'cancelled by request', ...(cancelledBy ? { actor: cancelledBy } : {}) }));
        throw err;
      }
      return await settleFailed(describeWorkFailure(op, err));
    }
  }

  const info = workflowInfo();
  const childId = opWorkWorkflowId(opId);
  let outcome: OpWorkOutcome | undefined = carried?.outcome;
  let childStarted = carried !== undefined;
  setHandler(opWorkDoneSignal, (o: OpWorkOutcome) => {
    outcome ??= o;
  });
  // The outcome may arrive while handing over: it travels with the state.
  const withOutcome = (): { outcome?: OpWorkOutcome } => (outcome !== undefined ? { outcome } : {});
  const shouldHandOver = () => {
    const now = workflowInfo();
    return now.continueAsNewSuggested || (op.maxHistoryEvents !== undefined && now.historyLength >= op.maxHistoryEvents);
  };

  try {
    if (!carried) {
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
      childStarted = true;
    }
    const forwarding = forward();
    forwarding.catch(() => undefined);
    await condition(() => outcome !== undefined || shouldHandOver());
    if (outcome === undefined) {
      handingOver = true;
      await forwarding;
      await condition(allHandlersFinished);
      return await op.continueAsNew({
        accepted,
        delivered,
        pending: [...queue],
        pendingActors: [...senders],
        keys: Object.fromEntries(keys),
        ...withOutcome(),
        continuations: (carried?.continuations ?? 0) + 1,
      });
    }
    workDone = true;
    await forwarding;
    const ended: OpWorkOutcome = outcome;
    if (ended.outcome === 'SUCCEEDED') {
      status = 'SUCCEEDED';
      return { opId, status: 'SUCCEEDED' };
    }
    if (ended.outcome === 'CANCELLED') {
      status = 'CANCELLED';
      await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'CANCELLED', error: 'its work was cancelled' }));
      throw ApplicationFailure.create({ type: 'CONFLICT', message: `op ${opId}: its work was cancelled`, nonRetryable: true });
    }
    return await settleFailed(ended);
  } catch (err) {
    // Handing over to the next run, or settled already (FAILED, or its work cancelled): it stands.
    if (err instanceof ContinueAsNew || status !== 'RUNNING') throw err;
    if (!isCancellation(err) || !CancellationScope.current().consideredCancelled) return await settleFailed(describeWorkFailure(op, err));
    await CancellationScope.nonCancellable(async () => {
      if (childStarted && outcome === undefined) {
        try {
          await getExternalWorkflowHandle(childId).cancel();
        } catch {
          // Already closed: its outcome is on the way.
        }
        await condition(() => outcome !== undefined, op.work.heartbeatTimeoutMs * 3 + 60_000);
      }
    });
    workDone = true;
    if (outcome?.outcome === 'SUCCEEDED') {
      status = 'SUCCEEDED';
      return { opId, status: 'SUCCEEDED' };
    }
    status = 'CANCELLED';
    await CancellationScope.nonCancellable(() => book.settleOp({ opId, status: 'CANCELLED', error: 'cancelled by request', ...(cancelledBy ? { actor: cancelledBy } : {}) }));
    throw err;
  }
}
