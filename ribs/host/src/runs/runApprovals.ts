import { POLICY_APPROVAL_NODE, POLICY_APPROVAL_WORKFLOW, workflowDefinitionSchema } from '@keelson/schema';
import type { ApprovalRequest } from '@keelson/ribs-contract';
import { errorMessage } from '../errors';
import type { ApprovalPort } from '../ports/approvalPort';
import type { WarningSink } from '../warnings';
import type { RunsPort } from './runsPort';

/** Options of {@link runApprovalPort}. */
export interface RunApprovalOptions {
  runs: () => RunsPort | undefined;
  warn: WarningSink;
  /** An unanswered approval is rejected (and its run cancelled) after this long. @default 300000 */
  maxWaitMs?: number;
}

/** The gate's question: enough to judge the call, never the tool's arguments. */
export function approvalPrompt(req: ApprovalRequest): string {
  const who = req.ribId ? `rib '${req.ribId}'` : 'a caller';
  const what = req.tool ? `tool '${req.tool}'${req.targetRibId ? ` of rib '${req.targetRibId}'` : ''}` : `a ${req.surface} turn`;
  const where = [req.workflowName ? `workflow '${req.workflowName}'` : null, req.nodeId ? `node '${req.nodeId}'` : null, req.provider ? `provider '${req.provider}'` : null]
    .filter(Boolean)
    .join(', ');
  return [
    `Policy ${req.policyId} asks before ${who} uses ${what} (surface ${req.surface}${where ? `, ${where}` : ''}).`,
    `Reason: ${req.reason}`,
    'Answer "approve" to allow this call; any other answer denies it.',
  ].join('\n');
}

/**
 * Policy `ask` → an approval gate, answered through the same mechanism as every workflow gate: each
 * ask starts a one-node run of `policy-approval` (an approval node `approve`) that pauses with the
 * policy's question as its `pendingApproval`. The operator (or a granted rib) answers it with
 * `respondToRun(runId, "approve", text, pauseId)`: `approve` → accept; feedback fails the gate →
 * reject. The caller's abort (its timeout, e.g. `KEELSON_CROSS_RIB_CALL_TIMEOUT_MS` for
 * `startWorkflow`) or `maxWaitMs` cancels the run → reject. No runs domain → reject.
 */
export function runApprovalPort(opts: RunApprovalOptions): ApprovalPort {
  const maxWaitMs = opts.maxWaitMs ?? 300_000;
  return {
    async request(req, signal, opened) {
      const runs = opts.runs();
      if (!runs || signal?.aborted) return 'reject';
      let runId: string;
      try {
        const definition = workflowDefinitionSchema.parse({
          name: POLICY_APPROVAL_WORKFLOW,
          description: `Policy ${req.policyId} asks the operator`,
          nodes: [{ id: POLICY_APPROVAL_NODE, type: 'approval', prompt: approvalPrompt(req) }],
        });
        ({ runId } = await runs.startDefinition({
          definition,
          ribId: null,
          startedByRibId: null,
          scope: 'BUNDLED',
          title: `policy approval: ${req.policyId} — ${req.tool ?? req.surface}${req.ribId ? ` by ${req.ribId}` : ''}`,
        }));
      } catch (err) {
        opts.warn({ stage: 'runtime', rule: 'approval-failed', ribId: req.ribId, message: `could not open an approval for ${req.policyId}; denying: ${errorMessage(err)}` });
        return 'reject';
      }
      const wait = signal ? AbortSignal.any([signal, AbortSignal.timeout(maxWaitMs)]) : AbortSignal.timeout(maxWaitMs);
      try {
        if (opened) {
          // The inbox's approval exists once the gate opened; a run that settles first has none to tell.
          const gate = await runs.gate(runId, wait).catch((err: unknown) => {
            if (wait.aborted) throw err;
            return null;
          });
          if (gate?.approvalId) await opened(gate.approvalId);
        }
        const run = await runs.settled(runId, wait);
        return run.status === 'SUCCEEDED' ? 'accept' : 'reject';
      } catch {
        await runs.cancel(runId).catch(() => undefined);
        return 'reject';
      }
    },
  };
}
