import type { ModelClass, ReasoningEffort } from '@keelson/schema';
import type { TokenUsage } from '@keelson/ribs-contract';

/** What a provider can honestly do; the turn engine reads these, it never guesses. */
export interface ProviderCapabilities {
  /** Streams its answer (both built-in protocols do). */
  readonly streaming: boolean;
  /** Accepts tool definitions and answers with tool calls. */
  readonly tools: boolean;
  /** Its transcript can be kept and replayed, so a `resumeSessionId` continues a conversation. */
  readonly sessionResume: boolean;
  /** Accepts a reasoning-effort hint; when false the hint is dropped silently. */
  readonly reasoningEffort: boolean;
}

/** A tool as a model sees it. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the input (an object schema). */
  inputSchema: Record<string, unknown>;
}

/** A tool call the model made. */
export interface ToolCall {
  id: string;
  name: string;
  /** The parsed arguments; the raw text when it was not valid JSON. */
  input: unknown;
}

/** Reasoning a provider asks to be replayed verbatim (Anthropic thinking blocks with their signature). */
export interface ReasoningBlock {
  text: string;
  signature?: string;
}

/**
 * The protocol-neutral conversation the turn loop keeps (and a session stores). Each provider maps it
 * to its wire shape.
 */
export type TurnMessage =
  | { role: 'user'; text: string }
  | { role: 'assistant'; text: string; toolCalls: ToolCall[]; reasoning?: ReasoningBlock[] }
  | { role: 'tool'; results: { toolUseId: string; content: string; isError?: boolean }[] };

/** One model call. */
export interface ModelCallRequest {
  model: string;
  system?: string;
  messages: readonly TurnMessage[];
  /** Empty: the call offers no tools. */
  tools: readonly ToolSpec[];
  maxTokens: number;
  /** Present only when the provider reports `reasoningEffort`. */
  reasoningEffort?: ReasoningEffort;
  signal: AbortSignal;
}

/** Why one model call stopped. */
export type CallStopReason = 'end' | 'max_tokens' | 'tool_use';

/** What a model call streams: text as it comes, then the settled call. */
export type ModelCallEvent =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | {
      type: 'end';
      stopReason: CallStopReason;
      text: string;
      toolCalls: ToolCall[];
      reasoning: ReasoningBlock[];
      usage: TokenUsage;
      /** The model as the provider reported it. */
      model?: string;
    };

/** A registered model provider: one wire protocol at one endpoint. */
export interface ModelProvider {
  readonly id: string;
  readonly displayName: string;
  readonly defaultModel: string;
  /** The provider's own class map (the config file's `modelClasses` is applied over it by the registry). */
  readonly modelClasses: Readonly<Partial<Record<ModelClass, string>>>;
  readonly capabilities: ProviderCapabilities;
  /** Output cap of one call, when the provider configures its own. */
  readonly maxTokens?: number;
  /**
   * One streamed model call. Rejects with {@link ProviderError} for an HTTP or protocol failure and
   * with the signal's reason when aborted.
   */
  call(req: ModelCallRequest): AsyncIterable<ModelCallEvent>;
}

/** A provider's failure: the HTTP status (when there was one) and the API's own message. */
export class ProviderError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ProviderError';
  }
}
