import { policyDecisionSchema, type ApprovalNotice, type ApprovalObserver, type Policy, type PolicyContext, type PolicyEvent } from '@keelson/ribs-contract';
import { errorMessage } from '../errors';
import type { ApprovalPort } from '../ports/approvalPort';
import type { WarningSink } from '../warnings';

/** A policy in the engine, with its namespaced id and where it came from. */
export interface RegisteredPolicy {
  /** `builtin:<name>` or `<ribId>:<id>`. */
  id: string;
  /** `builtin`, or the contributing rib's id. */
  source: string;
  policy: Policy;
}

/**
 * The engine's verdict. `allow.data` is a substitution (redaction) for `tool_result` / `response`;
 * `deny` names the deciding policy.
 */
export type EngineDecision = { outcome: 'allow'; data?: string } | { outcome: 'deny'; reason: string; policyId: string };

function matches(policy: Policy, event: PolicyEvent): boolean {
  if (!policy.on) return true;
  const tool = 'tool' in event ? event.tool : undefined;
  return policy.on.some((m) => m.phase === event.phase && (m.tool === undefined || m.tool === tool));
}

function withSubstitution(event: PolicyEvent, text: string): PolicyEvent {
  if (event.phase === 'tool_result') return { ...event, result: text };
  if (event.phase === 'response') return { ...event, text };
  return event;
}

/**
 * One engine over the host's builtins and every rib's policies, evaluated in order (builtins
 * first, then ribs in activation order) at each hook point. The first `deny` wins. A policy that
 * throws or returns something malformed denies (fail closed). Several `ask`s coalesce into one
 * approval request, sent through the `ApprovalPort` on `tool_call` / `request`; with no port, or on
 * the result phases (the work already ran), an `ask` reads as deny with its reason.
 */
export class PolicyEngine {
  private readonly entries: RegisteredPolicy[] = [];

  constructor(
    private readonly warn: WarningSink,
    private readonly approvals?: ApprovalPort,
  ) {}

  /** Adds a policy; rib policies are namespaced `<ribId>:<id>`. */
  add(policy: Policy, source: string): RegisteredPolicy {
    const id = source === 'builtin' ? policy.id : `${source}:${policy.id}`;
    const entry = { id, source, policy };
    this.entries.push(entry);
    return entry;
  }

  /** Every policy, in evaluation order. */
  list(): readonly RegisteredPolicy[] {
    return [...this.entries];
  }

  /** Evaluates `event`; `signal` bounds an approval wait, `observe` hears an ask open and be answered. */
  async evaluate(event: PolicyEvent, ctx: PolicyContext, signal?: AbortSignal, observe?: ApprovalObserver): Promise<EngineDecision> {
    let current = event;
    let substitution: string | undefined;
    const asks: { policyId: string; reason: string }[] = [];
    for (const entry of this.entries) {
      if (!matches(entry.policy, current)) continue;
      let raw: unknown;
      try {
        raw = await entry.policy.evaluate(current, ctx);
      } catch (err) {
        this.warn({ stage: 'runtime', rule: 'policy-failed', ribId: ribOf(entry), message: `policy ${entry.id} threw; denying: ${errorMessage(err)}` });
        return { outcome: 'deny', reason: `policy ${entry.id} failed`, policyId: entry.id };
      }
      const decision = policyDecisionSchema.safeParse(raw);
      if (!decision.success) {
        this.warn({ stage: 'runtime', rule: 'policy-failed', ribId: ribOf(entry), message: `policy ${entry.id} returned a malformed decision; denying` });
        return { outcome: 'deny', reason: `policy ${entry.id} returned a malformed decision`, policyId: entry.id };
      }
      const d = decision.data;
      if (d.outcome === 'deny') return { outcome: 'deny', reason: d.reason, policyId: entry.id };
      if (d.outcome === 'ask') {
        asks.push({ policyId: entry.id, reason: d.reason });
      } else if (typeof d.data === 'string' && (current.phase === 'tool_result' || current.phase === 'response')) {
        substitution = d.data;
        current = withSubstitution(current, d.data);
      }
    }
    if (asks.length > 0) {
      const first = asks[0]!;
      const reason = asks.map((a) => a.reason).join('; ');
      if (current.phase === 'tool_result' || current.phase === 'response') {
        return { outcome: 'deny', reason: `${reason} (approval cannot be asked once the work has run)`, policyId: first.policyId };
      }
      if (!this.approvals) return { outcome: 'deny', reason: `${reason} (approval required; no approval channel)`, policyId: first.policyId };
      let answer: 'accept' | 'reject';
      const tool = current.phase === 'tool_call' ? current.tool : undefined;
      const notify = async (notice: ApprovalNotice) => {
        try {
          await observe?.(notice);
        } catch (err) {
          this.warn({ stage: 'runtime', rule: 'approval-failed', message: `an observer of ${first.policyId}'s approval failed: ${errorMessage(err)}` });
        }
      };
      let opened: string | undefined;
      try {
        answer = await this.approvals.request(
          {
            surface: ctx.surface,
            policyId: first.policyId,
            reason,
            tool,
            ribId: ctx.ribId,
            targetRibId: ctx.targetRibId,
            provider: ctx.provider,
            workflowName: ctx.workflowName,
            nodeId: ctx.nodeId,
          },
          signal,
          observe
            ? async (approvalId) => {
                opened = approvalId;
                await notify({ state: 'opened', policyId: first.policyId, reason, approvalId, ...(tool ? { tool } : {}) });
              }
            : undefined,
        );
      } catch (err) {
        this.warn({ stage: 'runtime', rule: 'approval-failed', message: `approval for ${first.policyId} failed; denying: ${errorMessage(err)}` });
        answer = 'reject';
      }
      if (opened) await notify({ state: 'answered', policyId: first.policyId, approvalId: opened, approved: answer === 'accept', ...(tool ? { tool } : {}) });
      if (answer !== 'accept') return { outcome: 'deny', reason: `${reason} (not approved)`, policyId: first.policyId };
    }
    return substitution === undefined ? { outcome: 'allow' } : { outcome: 'allow', data: substitution };
  }
}

function ribOf(entry: RegisteredPolicy): string | undefined {
  return entry.source === 'builtin' ? undefined : entry.source;
}
