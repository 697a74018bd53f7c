// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The in-memory state of one launch of a run (no Temporal API, so it is unit-tested on its own):
// dagRun.ts drives it, dagGates.ts and dagNodes.ts change it.
import type { CancellationScope } from '@temporalio/workflow';
import type { DagRunStatus, PlanNode } from '@keelson/schema';
import type { Answered, Closing, Gate, NodeState, RespondView } from './dagGraph';

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

/** A node's task in flight: its own cancellation scope, and whether it runs work or waits at a gate. */
export interface DagTask {
  scope: Pick<CancellationScope, 'cancel'>;
  kind: 'work' | 'gate';
}

/**
 * One launch's state: the plan and its nodes, open gates, answered pauses, tasks in flight, and how
 * the launch is closing. `version` changes whenever something the launch loop waits on may have.
 */
export class DagLaunch {
  plan: PlanNode[];
  readonly nodes: Map<string, NodeState>;
  readonly gates = new Map<string, Gate>();
  readonly answered: Map<string, Answered>;
  readonly running = new Map<string, DagTask>();
  closing: Closing | undefined;
  /** The first node failure: the launch fails with it. */
  failure: { nodeId: string; message: string; type: string } | undefined;
  /** The cancel node that stopped the run. */
  stopped: { nodeId: string; reason: string } | undefined;
  version = 0;
  /** Tasks settled by this execution (continue-as-new waits for at least one). */
  settledHere = 0;
  /** How many times the launch had continued as new before this execution. */
  readonly continuations: number;

  constructor(
    readonly runId: string,
    readonly launch: number,
    carried?: CarriedDagState,
  ) {
    this.plan = carried?.plan ?? [];
    this.nodes = new Map<string, NodeState>(Object.entries(carried?.nodes ?? {}));
    this.answered = new Map<string, Answered>((carried?.answered ?? []).map((a) => [a.pauseId, a]));
    this.continuations = carried?.continuations ?? 0;
  }

  bump(): void {
    this.version += 1;
  }

  setNode(id: string, state: NodeState): void {
    this.nodes.set(id, state);
    this.bump();
  }

  planNode(id: string): PlanNode | undefined {
    return this.plan.find((n) => n.id === id);
  }

  /** Takes the plan and node states the launch began with. */
  begin(plan: PlanNode[], nodes: Record<string, NodeState>): void {
    this.plan = plan;
    for (const node of plan) this.nodes.set(node.id, nodes[node.id] ?? { status: 'PENDING' });
  }

  /** Records a node failure (the first one wins) and closes the other branches' open gates. */
  fail(nodeId: string, message: string, type: string): void {
    this.failure ??= { nodeId, message, type };
    if (this.closing === undefined || this.closing === 'continuing') this.closing = 'failing';
    // Open gates of other branches close; commands in flight finish and keep their results.
    for (const [id, task] of this.running) if (task.kind === 'gate' && id !== nodeId) task.scope.cancel();
    this.bump();
  }

  /** A cancel node stops the run at once: nothing else starts, running nodes are cancelled. */
  stopAt(nodeId: string): void {
    this.stopped = { nodeId, reason: 'a cancel node was reached' };
    this.closing = 'stopping';
    for (const task of this.running.values()) task.scope.cancel();
  }

  /** A node's task is over, whatever its outcome. */
  settle(nodeId: string): void {
    this.running.delete(nodeId);
    this.settledHere += 1;
    this.bump();
  }

  /** Continuing as new, only open gates wait and no answer is being recorded (handlers aside). */
  quietForHandOver(): boolean {
    return (
      this.closing === 'continuing' &&
      [...this.running.values()].every((t) => t.kind === 'gate') &&
      [...this.gates.values()].every((g) => g.answer === undefined && g.recorded === undefined)
    );
  }

  /** What the next execution takes over. */
  handOver(): CarriedDagState {
    return {
      plan: this.plan,
      nodes: Object.fromEntries(this.nodes),
      gates: [...this.gates.values()].map((g) => ({ nodeId: g.nodeId, pauseId: g.pauseId })),
      answered: [...this.answered.values()],
      continuations: this.continuations + 1,
    };
  }

  /** What the `runStatus` query answers. */
  status(): DagRunStatus {
    return {
      runId: this.runId,
      launch: this.launch,
      nodes: Object.fromEntries([...this.nodes].map(([id, s]) => [id, s.status])),
      openGates: [...this.gates.values()].map((g) => ({ nodeId: g.nodeId, pauseId: g.pauseId })),
      closing: this.closing !== undefined && this.closing !== 'continuing',
    };
  }

  /** What the `respond` validator judges an answer against. */
  respondView(cancelled: boolean): RespondView {
    const { runId, plan, nodes, gates, answered, closing } = this;
    return { runId, plan, nodes, gates, answered, closing, cancelled };
  }
}

/**
 * What a launch is doing now, for the Temporal UI's "current details" (markdown): the nodes running,
 * the gates waiting for an answer, how many nodes are done, and how the launch is closing.
 */
export function describeLaunch(run: DagLaunch): string {
  const byStatus = (status: string) => [...run.nodes.entries()].filter(([, s]) => s.status === status).map(([id]) => id);
  const kind = (id: string) => run.planNode(id)?.type ?? 'node';
  const working = [...run.running.entries()].filter(([, t]) => t.kind === 'work').map(([id]) => `\`${id}\` (${kind(id)})`);
  const gates = [...run.gates.values()].map((g) => `\`${g.nodeId}\` (pause \`${g.pauseId}\`)${g.question ? ` — “${g.question.replace(/[`*_[\]<>\\]/g, '\\$&')}”` : ''}`);
  const done = byStatus('SUCCEEDED').length + byStatus('SKIPPED').length;
  // A blank line before the list: the UI's markdown does not let a list interrupt a paragraph.
  return [
    `**Run** \`${run.runId}\`, launch ${run.launch}: ${done} of ${run.nodes.size} nodes done\n`,
    working.length ? `- running: ${working.join(', ')}` : '- running: nothing',
    ...(gates.length ? [`- waiting for an answer at: ${gates.join(', ')} (respondToRun)`] : []),
    ...(run.failure ? [`- failed at \`${run.failure.nodeId}\`: ${run.failure.message.slice(0, 300)}`] : []),
    ...(run.stopped ? [`- stopped at \`${run.stopped.nodeId}\`: ${run.stopped.reason}`] : []),
    ...(run.closing ? [`- closing: ${run.closing}`] : []),
  ].join('\n');
}
