// Pure graph logic of a run (no Temporal API): which node may start, how a gate's answer is judged
// and which answers are refused. dagRun.ts orchestrates it; this module is deterministic by construction.
import { conditionHolds, runLimits, utf8Bytes, type PlanNode, type RespondInput, type RunNodeStatus } from '@keelson/schema';

export interface NodeState {
  status: RunNodeStatus;
  /** What `when` conditions compare (start of the trimmed output, or the approval answer). */
  value?: string;
}

export interface Answered {
  pauseId: string;
  nodeId: string;
  /** {@link fingerprint} of the recorded answer. */
  answer: string;
}

export interface Gate {
  nodeId: string;
  pauseId: string;
  /** The pause row exists (openGate committed). */
  opened: boolean;
  /** The question as the definition words it, shortened (for the Temporal UI; absent after continue-as-new). */
  question?: string;
  /** The answer being recorded; set by the first accepted update. */
  answer?: string;
  /** The recorded decision. */
  recorded?: { text: string; outcome: 'SUCCEEDED' | 'FAILED'; error?: string };
}

export type Closing = 'failing' | 'stopping' | 'cancelling' | 'continuing' | 'finishing';

/** How many answered pauses a run remembers (and carries over continue-as-new). */
export const ANSWERED_KEPT = 50;

/** Length and FNV-1a of a text: enough to tell a repeated answer from a different one without carrying it. */
export function fingerprint(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return `${text.length}:${h.toString(16)}`;
}

/** What to do with a node now: nothing yet, settle it SKIPPED, stop the run at it, or start its task. */
export type NodeStep = { kind: 'wait' } | { kind: 'skip'; reason: string } | { kind: 'stop' } | { kind: 'start'; task: 'work' | 'gate' };

/** The step of a PENDING node whose task is not running, by its dependencies' states and its `when`. */
export function nextStep(node: PlanNode, nodes: ReadonlyMap<string, NodeState>): NodeStep {
  if (nodes.get(node.id)?.status !== 'PENDING') return { kind: 'wait' };
  const deps = node.dependsOn.map((d) => nodes.get(d)?.status);
  if (!deps.every((s) => s === 'SUCCEEDED' || s === 'SKIPPED')) return { kind: 'wait' };
  const skippedDep = node.dependsOn.find((d) => nodes.get(d)?.status === 'SKIPPED');
  const skip = skippedDep
    ? `its dependency "${skippedDep}" was skipped`
    : node.when && !conditionHolds(node.when, nodes.get(node.when.node)?.value)
      ? `its condition on "${node.when.node}" does not hold`
      : undefined;
  if (skip) return { kind: 'skip', reason: skip };
  if (node.type === 'cancel') return { kind: 'stop' };
  return { kind: 'start', task: node.type === 'approval' ? 'gate' : 'work' };
}

/** How an answer settles its gate: approval, or feedback that continues or fails the node. */
export function gateOutcome(node: PlanNode, decision: 'approved' | 'feedback', text: string): { outcome: 'SUCCEEDED' | 'FAILED'; error?: string } {
  const outcome = decision === 'approved' || node.onFeedback === 'continue' ? 'SUCCEEDED' : 'FAILED';
  return outcome === 'FAILED' ? { outcome, error: `the gate was answered with feedback: ${text.slice(0, 300)}` } : { outcome };
}

/** What the `respond` validator sees of the run. */
export interface RespondView {
  runId: string;
  plan: readonly PlanNode[];
  nodes: ReadonlyMap<string, NodeState>;
  gates: ReadonlyMap<string, Gate>;
  answered: ReadonlyMap<string, Answered>;
  closing: Closing | undefined;
  /** The run's root scope is cancelled. */
  cancelled: boolean;
}

/**
 * Why an answer is refused ({ type, message }), or undefined when it is accepted (a repeat of the
 * recorded answer to the same pause is accepted: it is answered as a duplicate).
 */
export function respondRefusal(req: RespondInput, run: RespondView): { type: 'BAD_USER_INPUT' | 'CONFLICT'; message: string } | undefined {
  if (typeof req?.nodeId !== 'string' || typeof req.text !== 'string' || (req.pauseId !== undefined && typeof req.pauseId !== 'string')) {
    return { type: 'BAD_USER_INPUT', message: 'respond takes { nodeId: string, text: string, pauseId?: string }' };
  }
  const bytes = utf8Bytes(req.text);
  if (bytes > runLimits.answerBytes) return { type: 'BAD_USER_INPUT', message: `text: must be at most ${runLimits.answerBytes} bytes, got ${bytes}` };
  if (req.text.trim() === '') return { type: 'BAD_USER_INPUT', message: 'text: must not be empty (answer "approve" or give feedback)' };
  const prior = req.pauseId !== undefined ? run.answered.get(req.pauseId) : undefined;
  if (prior) {
    if (prior.nodeId === req.nodeId && prior.answer === fingerprint(req.text)) return undefined;
    return { type: 'CONFLICT', message: `pause ${req.pauseId} of gate "${prior.nodeId}" was already answered; one decision is recorded per pause` };
  }
  const { runId, closing } = run;
  if (run.cancelled || closing === 'cancelling') return { type: 'CONFLICT', message: `run ${runId} is being cancelled; its gates are closed` };
  if (closing && closing !== 'continuing') return { type: 'CONFLICT', message: `run ${runId} is ${closing === 'failing' ? 'failing' : 'stopping'}; its gates are closed` };
  const gate = run.gates.get(req.nodeId);
  if (!gate) {
    const node = run.plan.find((n) => n.id === req.nodeId);
    const why = !node
      ? `the run has no node "${req.nodeId}"`
      : node.type !== 'approval'
        ? `"${req.nodeId}" is a ${node.type} node, not an approval`
        : `its status is ${run.nodes.get(req.nodeId)?.status ?? 'PENDING'}`;
    return { type: 'CONFLICT', message: `gate "${req.nodeId}" is not open: ${why}` };
  }
  if (req.pauseId !== undefined && req.pauseId !== gate.pauseId) {
    return { type: 'CONFLICT', message: `pauseId ${req.pauseId} is stale: gate "${gate.nodeId}" is open with pause ${gate.pauseId}` };
  }
  if (gate.answer !== undefined && gate.answer !== req.text) {
    return { type: 'CONFLICT', message: `gate "${gate.nodeId}" (pause ${gate.pauseId}) already has an answer; one decision is recorded per pause` };
  }
  return undefined;
}

/** Remembers an answered pause, forgetting the oldest beyond {@link ANSWERED_KEPT}. */
export function remember(answered: Map<string, Answered>, entry: Answered): void {
  answered.set(entry.pauseId, entry);
  while (answered.size > ANSWERED_KEPT) answered.delete(answered.keys().next().value!);
}
