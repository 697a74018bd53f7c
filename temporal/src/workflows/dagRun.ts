// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import {
  ActivityCancellationType,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  proxyActivities,
  setHandler,
  TimeoutFailure,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import { isApproval, type DagRunStatus, type PlanNode, type RespondInput, type RespondResult } from '@keelson/schema';
import type { RunActivities } from '../activities/runs/runActivities';
import { fingerprint, gateOutcome, nextStep, remember, respondRefusal, type Answered, type Closing, type Gate, type NodeState } from './dagGraph';
import { respondUpdate, runStatusQuery } from './messages';

export type { NodeState } from './dagGraph';

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

/** Everything a continued execution needs: no node runs twice and open gates keep their pause ids. */
export interface CarriedDagState {
  plan: PlanNode[];
  nodes: Record<string, NodeState>;
  /** Gates open at the hand-over; their pause rows already exist. */
  gates: { nodeId: string; pauseId: string }[];
  /** The latest answered pauses (fingerprints, not texts), so a repeated answer stays idempotent after the hand-over. */
  answered: Answered[];
  continuations: number;
}

export interface DagRunResult {
  runId: string;
  launch: number;
  status: 'SUCCEEDED' | 'CANCELLED';
  error?: string;
  /** How many times this launch continued as new. */
  continuations: number;
}

/** Bookkeeping activities: short, retried until the database answers. */
const book = proxyActivities<RunActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'] },
});

/** How many times a node's activity is retried beyond its own `retries` when its worker is lost. */
const LOST_WORKER_RETRIES = 3;

function nodeActivities(node: PlanNode, heartbeatTimeoutMs: number) {
  return proxyActivities<RunActivities>({
    // The node's own timeout is enforced by the activity (it kills the command); this is the backstop.
    startToCloseTimeout: node.timeoutMs + 60_000,
    heartbeatTimeout: heartbeatTimeoutMs,
    // The run reports CANCELLED only after the command's process group was killed.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: node.retries + 1 + LOST_WORKER_RETRIES,
      nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'],
    },
  });
}

function reject(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}

/** A one-line reason and an error type for a failed node. */
function describeFailure(err: unknown): { message: string; type: string } {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  if (cause instanceof TimeoutFailure) {
    return { message: `its worker was lost (${cause.timeoutType === 'HEARTBEAT' ? 'no heartbeat' : 'timed out'}) and retries ran out`, type: 'UPSTREAM_FAILED' };
  }
  if (cause instanceof ApplicationFailure) return { message: cause.message, type: cause.type ?? 'UPSTREAM_FAILED' };
  return { message: cause instanceof Error ? cause.message : String(err), type: 'UPSTREAM_FAILED' };
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
  let plan: PlanNode[] = input.carried?.plan ?? [];
  const nodes = new Map<string, NodeState>(Object.entries(input.carried?.nodes ?? {}));
  const gates = new Map<string, Gate>();
  const answered = new Map<string, Answered>((input.carried?.answered ?? []).map((a) => [a.pauseId, a]));
  const running = new Map<string, { scope: CancellationScope; kind: 'work' | 'gate' }>();
  let closing: Closing | undefined;
  let failure: { nodeId: string; message: string; type: string } | undefined;
  let stopped: { nodeId: string; reason: string } | undefined;
  let version = 0;
  let settledHere = 0;
  const bump = () => {
    version += 1;
  };
  const setNode = (id: string, state: NodeState) => {
    nodes.set(id, state);
    bump();
  };
  const planNode = (id: string) => plan.find((n) => n.id === id);

  setHandler(runStatusQuery, (): DagRunStatus => ({
    runId,
    launch,
    nodes: Object.fromEntries([...nodes].map(([id, s]) => [id, s.status])),
    openGates: [...gates.values()].map((g) => ({ nodeId: g.nodeId, pauseId: g.pauseId })),
    closing: closing !== undefined && closing !== 'continuing',
  }));

  setHandler(
    respondUpdate,
    async (req: RespondInput): Promise<RespondResult> => {
      const decision = isApproval(req.text) ? 'approved' : 'feedback';
      const prior = req.pauseId !== undefined ? answered.get(req.pauseId) : undefined;
      if (prior) return { ok: true, pauseId: prior.pauseId, decision, duplicate: true };
      const gate = gates.get(req.nodeId)!;
      if (gate.answer !== undefined) {
        await CancellationScope.nonCancellable(() => condition(() => gate.recorded !== undefined || gate.answer === undefined));
        if (!gate.recorded) throw reject('CONFLICT', `gate "${gate.nodeId}" (pause ${gate.pauseId}): the first answer could not be recorded; answer again`);
        return { ok: true, pauseId: gate.pauseId, decision, duplicate: true };
      }
      gate.answer = req.text;
      // Accepted: from here on the answer is recorded (or given up) even if the run is cancelled meanwhile.
      try {
        await CancellationScope.nonCancellable(async () => {
          await condition(() => gate.opened || nodes.get(gate.nodeId)?.status !== 'WAITING');
          if (!gate.opened) {
            // The gate's opening was cut short (the run is being cancelled, failing or stopping).
            throw reject('CONFLICT', root.consideredCancelled ? `run ${runId} is being cancelled; its gates are closed` : `gate "${gate.nodeId}" closed before it opened`);
          }
          const { outcome, error } = gateOutcome(planNode(gate.nodeId)!, decision, req.text);
          const closed = await book.closeGate({ runId, pauseId: gate.pauseId, text: req.text, decision, outcome, ...(error ? { error } : {}), ...(req.actor ? { actor: req.actor } : {}) });
          if (!closed.recorded && !(closed.closedBy === 'answer' && closed.decision === req.text)) {
            throw reject('CONFLICT', `gate "${gate.nodeId}" (pause ${gate.pauseId}) closed (${closed.closedBy}) before the answer was recorded`);
          }
          gate.recorded = { text: req.text, outcome, ...(error ? { error } : {}) };
        });
      } catch (err) {
        gate.answer = undefined;
        bump();
        throw err;
      }
      remember(answered, { pauseId: gate.pauseId, nodeId: gate.nodeId, answer: fingerprint(req.text) });
      bump();
      return { ok: true, pauseId: gate.pauseId, decision, duplicate: false };
    },
    {
      validator: (req: RespondInput) => {
        const refusal = respondRefusal(req, { runId, plan, nodes, gates, answered, closing, cancelled: root.consideredCancelled });
        if (refusal) throw reject(refusal.type, refusal.message);
      },
    },
  );

  /** Waits for the gate's decision; the gate may come from a previous execution (continue-as-new). */
  async function awaitGate(node: PlanNode, gate: Gate): Promise<void> {
    try {
      await condition(() => gate.recorded !== undefined);
    } catch (err) {
      // An answer being recorded when the wait is cancelled still settles the node.
      if (!isCancellation(err) || gate.answer === undefined) throw err;
      await CancellationScope.nonCancellable(() => condition(() => gate.recorded !== undefined || gate.answer === undefined));
      if (!gate.recorded) throw err;
    }
    gates.delete(node.id);
    const recorded = gate.recorded!;
    setNode(node.id, { status: recorded.outcome, value: recorded.text });
    if (recorded.outcome === 'FAILED') fail(node.id, recorded.error ?? 'the gate was answered with feedback', 'BAD_USER_INPUT');
  }

  async function runApproval(node: PlanNode): Promise<void> {
    const gate: Gate = { nodeId: node.id, pauseId: uuid4(), opened: false };
    gates.set(node.id, gate);
    setNode(node.id, { status: 'WAITING' });
    await book.openGate({ runId, nodeId: node.id, launch, pauseId: gate.pauseId });
    gate.opened = true;
    await awaitGate(node, gate);
  }

  async function runNode(node: PlanNode): Promise<void> {
    if (node.type === 'approval') return runApproval(node);
    if (node.type === 'cancel') {
      const { reason } = await book.stopAtCancelNode({ runId, nodeId: node.id, launch });
      stopped = { nodeId: node.id, reason };
      setNode(node.id, { status: 'SUCCEEDED', value: reason });
      return;
    }
    setNode(node.id, { status: 'RUNNING' });
    const acts = nodeActivities(node, input.heartbeatTimeoutMs);
    const outcome = node.type === 'prompt' ? await acts.runPromptNode({ runId, nodeId: node.id, launch }) : await acts.runCommandNode({ runId, nodeId: node.id, launch });
    setNode(node.id, { status: 'SUCCEEDED', value: outcome.value });
  }

  function fail(nodeId: string, message: string, type: string): void {
    failure ??= { nodeId, message, type };
    if (closing === undefined || closing === 'continuing') closing = 'failing';
    // Open gates of other branches close; commands in flight finish and keep their results.
    for (const [id, task] of running) if (task.kind === 'gate' && id !== nodeId) task.scope.cancel();
    bump();
  }

  /** Runs a node's task in its own cancellation scope; it settles the node whatever happens. */
  function launchTask(node: PlanNode, kind: 'work' | 'gate', body: () => Promise<void>): void {
    const scope = new CancellationScope();
    running.set(node.id, { scope, kind });
    void scope
      .run(body)
      .catch(async (err: unknown) => {
        if (isCancellation(err) || scope.consideredCancelled) {
          await CancellationScope.nonCancellable(() => book.settleNode({ runId, nodeId: node.id, launch, status: 'CANCELLED', error: 'cancelled' }));
          setNode(node.id, { status: 'CANCELLED' });
          return;
        }
        const { message, type } = describeFailure(err);
        await CancellationScope.nonCancellable(() => book.settleNode({ runId, nodeId: node.id, launch, status: 'FAILED', error: message }));
        setNode(node.id, { status: 'FAILED' });
        fail(node.id, message, type);
      })
      .catch((err: unknown) => fail(node.id, `settling the node failed: ${describeFailure(err).message}`, 'INTERNAL'))
      .finally(() => {
        running.delete(node.id);
        settledHere += 1;
        bump();
      });
  }

  function startReadyNodes(): void {
    for (const node of plan) {
      if (running.has(node.id)) continue;
      const step = nextStep(node, nodes);
      if (step.kind === 'wait') continue;
      if (step.kind === 'skip') {
        launchTask(node, 'work', async () => {
          await book.settleNode({ runId, nodeId: node.id, launch, status: 'SKIPPED', error: step.reason });
          setNode(node.id, { status: 'SKIPPED', value: '' });
        });
        continue;
      }
      if (step.kind === 'stop') {
        // A cancel node stops the run at once: nothing else starts, running nodes are cancelled.
        stopped = { nodeId: node.id, reason: 'a cancel node was reached' };
        closing = 'stopping';
        for (const task of running.values()) task.scope.cancel();
        launchTask(node, 'work', () => runNode(node));
        return;
      }
      launchTask(node, step.task, () => runNode(node));
    }
  }

  function shouldContinueAsNew(): boolean {
    if (settledHere === 0) return false;
    const info = workflowInfo();
    return info.continueAsNewSuggested || (input.maxHistoryEvents !== undefined && info.historyLength >= input.maxHistoryEvents);
  }

  try {
    if (!input.carried) {
      let begun: Awaited<ReturnType<typeof book.beginLaunch>>;
      try {
        begun = await book.beginLaunch({ runId, launch });
      } catch (err) {
        if (isCancellation(err)) throw err;
        // Nothing ran (a worktree that could not be leased, say): the launch fails as a whole.
        const { message, type } = describeFailure(err);
        const error = `the run could not begin: ${message}`;
        await CancellationScope.nonCancellable(() => book.finishRun({ runId, launch, status: 'FAILED', error }));
        throw ApplicationFailure.create({ type, message: error, nonRetryable: true });
      }
      plan = begun.plan;
      for (const node of plan) nodes.set(node.id, begun.nodes[node.id] ?? { status: 'PENDING' });
    } else {
      for (const { nodeId, pauseId } of input.carried.gates) {
        const node = planNode(nodeId)!;
        const gate: Gate = { nodeId, pauseId, opened: true };
        gates.set(nodeId, gate);
        launchTask(node, 'gate', () => awaitGate(node, gate));
      }
    }

    // A hand-over waits for running work and answers in flight; open gates travel with it.
    const readyToHandOver = () =>
      closing === 'continuing' &&
      [...running.values()].every((t) => t.kind === 'gate') &&
      [...gates.values()].every((g) => g.answer === undefined && g.recorded === undefined) &&
      allHandlersFinished();
    for (;;) {
      if (!closing) startReadyNodes();
      if (running.size === 0 || readyToHandOver()) break;
      const seen = version;
      await condition(() => version !== seen || readyToHandOver());
      if (!closing && shouldContinueAsNew()) closing = 'continuing';
    }
    await condition(allHandlersFinished);

    if (closing === 'continuing' && !failure && !stopped) {
      return await continueAsNew<typeof dagRun>({
        ...input,
        carried: {
          plan,
          nodes: Object.fromEntries(nodes),
          gates: [...gates.values()].map((g) => ({ nodeId: g.nodeId, pauseId: g.pauseId })),
          answered: [...answered.values()],
          continuations: (input.carried?.continuations ?? 0) + 1,
        },
      });
    }
    closing = 'finishing';
    const continuations = input.carried?.continuations ?? 0;
    // The outcome is decided: record it even if a cancel arrives now.
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
  } catch (err) {
    if (!isCancellation(err) || !root.consideredCancelled) throw err;
    closing = 'cancelling';
    await CancellationScope.nonCancellable(async () => {
      // Running commands acknowledge the cancel (their process groups killed) and settle themselves.
      await condition(() => running.size === 0 && allHandlersFinished());
      await book.finishRun({ runId, launch, status: 'CANCELLED', error: 'cancelled by request' });
    });
    throw err;
  }
}
