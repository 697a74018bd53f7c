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
}

/** Rough token counts: four characters a token, at least one. */
export function estimateTokens(chars: number): number {
  return Math.max(1, Math.ceil(chars / 4));
}
