/** A tool call the model makes, ready for any protocol. */
export interface PlannedToolCall {
  /** The protocol-neutral call id (`call_…`); Anthropic renders it as `toolu_…`. */
  id: string;
  name: string;
  kind: 'function' | 'custom';
  /** JSON text of the arguments (`function`), or the freeform input (`custom`). */
  input: string;
}

/** The decided answer to one request, before a protocol renders it. */
export interface ReplyPlan {
  reasoning: string;
  text: string;
  toolCalls: PlannedToolCall[];
  delayMs: number;
  durationMs: number;
  error?: { status: number; message: string };
  /** The rule (or built-in behaviour) that decided, for the request log. */
  decidedBy: string;
  /** True for a CLI's side request (title, memory extraction) rather than an agent turn. */
  side: boolean;
  /** The answer was cut at the request's output-token cap: the protocols report `max_tokens` / `length`. */
  truncated?: boolean;
}

/**
 * Cuts a plan at the request's output-token cap (`max_tokens`, `max_completion_tokens`), as a real
 * model stops mid-answer: the text is cut to the cap (four characters a token) and a tool call the
 * answer never finished is dropped. A plan within the cap is returned as it is.
 */
export function capOutput(plan: ReplyPlan, maxTokens: unknown): ReplyPlan {
  if (typeof maxTokens !== 'number' || !Number.isInteger(maxTokens) || maxTokens <= 0) return plan;
  const chars = plan.reasoning.length + plan.text.length + plan.toolCalls.reduce((n, c) => n + c.name.length + c.input.length, 0);
  if (estimateTokens(chars) <= maxTokens) return plan;
  const room = Math.max(0, maxTokens * 4 - plan.reasoning.length);
  return { ...plan, text: plan.text.slice(0, room), toolCalls: [], truncated: true };
}

/** Rough token counts: four characters a token, at least one. */
export function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}
