// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The launch lifecycle of a run: begin (or take over a hand-over), the loop, continue-as-new, finish,
// cancel. Its state is dagState.ts, its gates dagGates.ts, its node execution dagNodes.ts.
import { allHandlersFinished, ApplicationFailure, CancellationScope, condition, continueAsNew, isCancellation, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import { book, launchBook } from './dagBook';
import { awaitGate, handleRespond } from './dagGates';
import type { Gate } from './dagGraph';
import { describeFailure, launchTask, startReadyNodes } from './dagNodes';
import { DagLaunch, describeLaunch, type CarriedDagState } from './dagState';
import type { Actor } from '@keelson/schema';
import { cancelledBySignal, runStatusQuery } from './messages';
import { handleSteer } from './dagSteer';

export type { NodeState } from './dagGraph';
export type { CarriedDagState } from './dagState';

export interface DagRunInput {
  /** The run (a row of `runs`); the definition and every body stay in Postgres. */
  runId: string;
  /** Which launch of the run this is: 1, then +1 per resumeRun. */
  launch: number;
  /** Heartbeat timeout of node activities: a lost worker or a cancel is noticed within it. */
  heartbeatTimeoutMs: number;
  /** Continue as new once history reaches this many events (Temporal's own suggestion applies too). */
  maxHistoryEvents?: number;
  /** State handed over by continue-as-new. */
  carried?: CarriedDagState;
}

export interface DagRunResult {
  runId: string;
  launch: number;
  status: 'SUCCEEDED' | 'CANCELLED';
  error?: string;
  /** How many times this launch continued as new. */
  continuations: number;
}

/** Nothing ran (a worktree that could not be leased, say): the launch fails as a whole. */
async function failToBegin(run: DagLaunch, err: unknown): Promise<never> {
  const { runId, launch } = run;
  const { message, type } = describeFailure(err);
  const error = `the run could not begin: ${message}`;
  await CancellationScope.nonCancellable(() => book.finishRun({ runId, launch, status: 'FAILED', error }));
  throw ApplicationFailure.create({ type, message: error, nonRetryable: true });
}

/** Takes over the gates a previous execution left open: their pause rows exist, they only wait. */
function resumeGates(run: DagLaunch, carried: CarriedDagState): void {
  for (const { nodeId, pauseId } of carried.gates) {
    const node = run.planNode(nodeId)!;
    const gate: Gate = { nodeId, pauseId, opened: true };
    run.gates.set(nodeId, gate);
    launchTask(run, node, 'gate', () => awaitGate(run, node, gate));
  }
}

function shouldContinueAsNew(run: DagLaunch, input: DagRunInput): boolean {
  if (run.settledHere === 0) return false;
  const info = workflowInfo();
  return info.continueAsNewSuggested || (input.maxHistoryEvents !== undefined && info.historyLength >= input.maxHistoryEvents);
}

/** Hands the launch over to a new execution, or records its outcome (even if a cancel arrives now). */
async function closeLaunch(run: DagLaunch, input: DagRunInput): Promise<DagRunResult> {
  const { runId, launch, failure, stopped } = run;
  if (run.closing === 'continuing' && !failure && !stopped) {
    return await continueAsNew<typeof dagRun>({ ...input, carried: run.handOver() });
  }
  run.closing = 'finishing';
  const { continuations } = run;
  if (stopped) {
    const error = `cancelled by node "${stopped.nodeId}": ${stopped.reason}`;
    await CancellationScope.nonCancellable(() => book.finishRun({ runId, launch, status: 'CANCELLED', error }));
    return { runId, launch, status: 'CANCELLED', error, continuations };
  }
  if (failure) {
    const error = `node "${failure.nodeId}" failed: ${failure.message}`;
    await CancellationScope.nonCancellable(() => book.finishRun({ runId, launch, status: 'FAILED', error }));
    throw ApplicationFailure.create({ type: failure.type, message: error, nonRetryable: true });
  }
  await CancellationScope.nonCancellable(() => book.finishRun({ runId, launch, status: 'SUCCEEDED' }));
  return { runId, launch, status: 'SUCCEEDED', continuations };
}

/**
 * Executes one launch of a run: ready nodes in parallel (each its own activity with its timeout,
 * retries and heartbeats), approval gates answered through the `respond` Update, cancellation
 * reaching running commands, and continue-as-new before history grows too long. Every transition is
 * written to Postgres with its `runs` event by an activity.
 */
export async function dagRun(input: DagRunInput): Promise<DagRunResult> {
  const { runId, launch } = input;
  const root = CancellationScope.current();
  const run = new DagLaunch(runId, launch, input.carried);
  setHandler(runStatusQuery, () => run.status());
  // Who asks for the cancel that follows (the executor signals it first): the CANCELLED frame names them.
  let cancelledBy: Actor | undefined;
  setHandler(cancelledBySignal, (actor) => void (cancelledBy = actor));
  handleRespond(run, root);
  handleSteer(run);

  try {
    if (!input.carried) {
      let begun: Awaited<ReturnType<typeof launchBook.beginLaunch>>;
      try {
        begun = await launchBook.beginLaunch({ runId, launch });
      } catch (err) {
        if (isCancellation(err)) throw err;
        return await failToBegin(run, err);
      }
      run.begin(begun.plan, begun.nodes);
    } else {
      resumeGates(run, input.carried);
    }

    // A hand-over waits for running work and answers in flight; open gates travel with it.
    const readyToHandOver = () => run.quietForHandOver() && allHandlersFinished();
    for (;;) {
      if (!run.closing) startReadyNodes(run, input.heartbeatTimeoutMs);
      setCurrentDetails(describeLaunch(run));
      if (run.running.size === 0 || readyToHandOver()) break;
      const seen = run.version;
      await condition(() => run.version !== seen || readyToHandOver());
      if (!run.closing && shouldContinueAsNew(run, input)) run.closing = 'continuing';
    }
    await condition(allHandlersFinished);
    return await closeLaunch(run, input);
  } catch (err) {
    if (!isCancellation(err) || !root.consideredCancelled) throw err;
    run.closing = 'cancelling';
    await CancellationScope.nonCancellable(async () => {
      // Running commands acknowledge the cancel (their process groups killed) and settle themselves.
      await condition(() => run.running.size === 0 && allHandlersFinished());
      await book.finishRun({ runId, launch, status: 'CANCELLED', error: 'cancelled by request', ...(cancelledBy ? { actor: cancelledBy } : {}) });
    });
    throw err;
  }
}
