import { z } from 'zod';

/** The turn surface an evaluation runs on. `mcp` is the gateway exposing tools to MCP clients. */
export type PolicySurface = 'chat' | 'workflow' | 'rib' | 'mcp';

/** The hook points a policy is evaluated at. */
export type PolicyPhase = 'tool_call' | 'tool_result' | 'request' | 'response';

/** What is being evaluated. */
export type PolicyEvent =
  | { phase: 'tool_call'; tool: string; args?: unknown; ribId?: string; targetRibId?: string; provider?: string }
  | { phase: 'tool_result'; tool: string; result: unknown; isError?: boolean }
  | { phase: 'request'; prompt: string }
  | { phase: 'response'; text: string };

/**
 * A policy's verdict. `allow` is "no opinion"; on `tool_result` / `response` an allow with string
 * `data` substitutes that text (redaction). `deny` short-circuits with a reason. `ask` pauses for a
 * human: accepted reads as allow, anything else as deny (and on result phases it degrades to deny).
 */
export type PolicyDecision =
  | { outcome: 'allow'; data?: unknown }
  | { outcome: 'deny'; reason: string }
  | { outcome: 'ask'; reason: string };

/** The wire shape of a decision; the host fails closed on anything else. */
export const policyDecisionSchema = z.discriminatedUnion('outcome', [
  z.object({ outcome: z.literal('allow'), data: z.unknown().optional() }),
  z.object({ outcome: z.literal('deny'), reason: z.string().min(1) }),
  z.object({ outcome: z.literal('ask'), reason: z.string().min(1) }),
]);

/**
 * The context of one evaluation. `workflowName` / `nodeId` are set on the workflow surface only; on
 * other surfaces (and older hosts) they read as undefined, so a scope check simply stops matching.
 */
export interface PolicyContext {
  readonly surface: PolicySurface;
  readonly ribId?: string;
  readonly targetRibId?: string;
  readonly provider?: string;
  readonly cwd?: string;
  /** Confinement roots of the turn; absent or empty means unconfined. */
  readonly allowedDirectories?: readonly string[];
  readonly workflowName?: string;
  readonly nodeId?: string;
}

/** A governance policy. Host builtins are `builtin:<name>`; the host namespaces rib policies `<ribId>:<id>`. */
export interface Policy {
  id: string;
  /** When set, the policy is consulted only for these phases (and tools); otherwise it self-selects. */
  on?: readonly { phase: PolicyPhase; tool?: string }[];
  evaluate(event: PolicyEvent, ctx: PolicyContext): PolicyDecision | Promise<PolicyDecision>;
}

/** A human's answer to an `ask`. */
export type RibApprovalDecision = 'accept' | 'reject';

/**
 * What a turn hears of an `ask` it waits on: the approval opened (with its inbox id, where the
 * approval channel has an inbox), then its answer. Hearing it never changes the decision.
 */
export type ApprovalNotice =
  | { state: 'opened'; policyId: string; reason: string; tool?: string; approvalId: string }
  | { state: 'answered'; policyId: string; tool?: string; approvalId: string; approved: boolean };

/** Receives a turn's {@link ApprovalNotice}s in order; the ask waits for it. */
export type ApprovalObserver = (notice: ApprovalNotice) => void | Promise<void>;

/** What an `ask` shows a human: enough to judge the call, never the tool's arguments. */
export interface ApprovalRequest {
  surface: PolicySurface;
  policyId: string;
  reason: string;
  tool?: string;
  ribId?: string;
  targetRibId?: string;
  provider?: string;
  workflowName?: string;
  nodeId?: string;
}
