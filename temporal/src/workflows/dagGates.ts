// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// Approval gates of a run: opening one, waiting for its decision, and the `respond` Update that answers it.
import { ApplicationFailure, CancellationScope, condition, isCancellation, setHandler, uuid4 } from '@temporalio/workflow';
import { isApproval, type PlanNode, type RespondInput, type RespondResult } from '@keelson/schema';
import { book } from './dagBook';
import { fingerprint, gateOutcome, remember, respondRefusal, type Gate } from './dagGraph';
import type { DagLaunch } from './dagState';
import { respondUpdate } from './messages';

function reject(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.create({ type, message, nonRetryable: true });
}

/**
 * Answers gates through the `respond` Update: the validator refuses what cannot be accepted; an
 * accepted answer is recorded once (closeGate) and a repeat of it is answered as a duplicate.
 * `root` is the launch's root scope (its cancellation closes the gates).
 */
export function handleRespond(run: DagLaunch, root: CancellationScope): void {
  const { runId } = run;
  setHandler(
    respondUpdate,
    async (req: RespondInput): Promise<RespondResult> => {
      const decision = isApproval(req.text) ? 'approved' : 'feedback';
      const prior = req.pauseId !== undefined ? run.answered.get(req.pauseId) : undefined;
      if (prior) return { ok: true, pauseId: prior.pauseId, decision, duplicate: true };
      const gate = run.gates.get(req.nodeId)!;
      if (gate.answer !== undefined) {
        await CancellationScope.nonCancellable(() => condition(() => gate.recorded !== undefined || gate.answer === undefined));
        if (!gate.recorded) throw reject('CONFLICT', `gate "${gate.nodeId}" (pause ${gate.pauseId}): the first answer could not be recorded; answer again`);
        return { ok: true, pauseId: gate.pauseId, decision, duplicate: true };
      }
      gate.answer = req.text;
      // Accepted: from here on the answer is recorded (or given up) even if the run is cancelled meanwhile.
      try {
        await CancellationScope.nonCancellable(async () => {
          await condition(() => gate.opened || run.nodes.get(gate.nodeId)?.status !== 'WAITING');
          if (!gate.opened) {
            // The gate's opening was cut short (the run is being cancelled, failing or stopping).
            throw reject('CONFLICT', root.consideredCancelled ? `run ${runId} is being cancelled; its gates are closed` : `gate "${gate.nodeId}" closed before it opened`);
          }
          const { outcome, error } = gateOutcome(run.planNode(gate.nodeId)!, decision, req.text);
          const closed = await book.closeGate({ runId, pauseId: gate.pauseId, text: req.text, decision, outcome, ...(error ? { error } : {}), ...(req.actor ? { actor: req.actor } : {}) });
          if (!closed.recorded && !(closed.closedBy === 'answer' && closed.decision === req.text)) {
            throw reject('CONFLICT', `gate "${gate.nodeId}" (pause ${gate.pauseId}) closed (${closed.closedBy}) before the answer was recorded`);
          }
          gate.recorded = { text: req.text, outcome, ...(error ? { error } : {}) };
        });
      } catch (err) {
        gate.answer = undefined;
        run.bump();
        throw err;
      }
      remember(run.answered, { pauseId: gate.pauseId, nodeId: gate.nodeId, answer: fingerprint(req.text) });
      run.bump();
      return { ok: true, pauseId: gate.pauseId, decision, duplicate: false };
    },
    {
      validator: (req: RespondInput) => {
        const refusal = respondRefusal(req, run.respondView(root.consideredCancelled));
        if (refusal) throw reject(refusal.type, refusal.message);
      },
    },
  );
}

/** Waits for the gate's decision; the gate may come from a previous execution (continue-as-new). */
export async function awaitGate(run: DagLaunch, node: PlanNode, gate: Gate): Promise<void> {
  try {
    await condition(() => gate.recorded !== undefined);
  } catch (err) {
    // An answer being recorded when the wait is cancelled still settles the node.
    if (!isCancellation(err) || gate.answer === undefined) throw err;
    await CancellationScope.nonCancellable(() => condition(() => gate.recorded !== undefined || gate.answer === undefined));
    if (!gate.recorded) throw err;
  }
  run.gates.delete(node.id);
  const recorded = gate.recorded!;
  run.setNode(node.id, { status: recorded.outcome, value: recorded.text });
  if (recorded.outcome === 'FAILED') run.fail(node.id, recorded.error ?? 'the gate was answered with feedback', 'BAD_USER_INPUT');
}

/** Opens an approval node's gate (a pause row) and waits for its decision. */
export async function runApproval(run: DagLaunch, node: PlanNode): Promise<void> {
  const gate: Gate = { nodeId: node.id, pauseId: uuid4(), opened: false };
  run.gates.set(node.id, gate);
  run.setNode(node.id, { status: 'WAITING' });
  const opened = await book.openGate({ runId: run.runId, nodeId: node.id, launch: run.launch, pauseId: gate.pauseId });
  gate.opened = true;
  // (Histories recorded before openGate answered have no question.)
  if (opened?.question) {
    gate.question = opened.question;
    run.bump(); // the current details show it
  }
  await awaitGate(run, node, gate);
}

