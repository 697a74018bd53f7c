import type { Conversation } from '../conversation/conversation';
import type { ReplyPlan } from '../script/replyPlan';
import type { Rendered } from './frames';

/** A parsed request: what it means, and how the client wants the answer. */
export interface ParsedRequest {
  conv: Conversation;
  stream: boolean;
  /** Chat Completions: send the final usage chunk (`stream_options.include_usage`). */
  includeUsage?: boolean;
  /** The request body, echoed where the protocol echoes request fields (Responses). */
  body: Record<string, unknown>;
}

/** One wire protocol: its request parsing, its rendering of a plan, its error body. */
export interface ProtocolAdapter {
  /** @returns the request, or the validation message for a 400. */
  parse(body: unknown): ParsedRequest | { invalid: string };
  /** @param inputTokens the estimated prompt size, reported as usage */
  render(plan: ReplyPlan, req: ParsedRequest, inputTokens: number): Rendered;
  errorBody(status: number, message: string): unknown;
}
