/** The wire protocol a request arrived on. */
export type Protocol = 'anthropic' | 'chat' | 'responses';

/** A JSON Schema object as a CLI sends it in a tool definition; only `properties` is read. */
export interface JsonSchema {
  type?: string | string[];
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  [key: string]: unknown;
}

/** One tool the request offers the model, whatever protocol it came in. */
export interface ConversationToolSpec {
  name: string;
  /** `function`: JSON arguments against `schema`. `custom`: one freeform text input (Responses API). */
  kind: 'function' | 'custom';
  description: string;
  schema?: JsonSchema;
}

/** A tool result the client sent back, after the last real user text. */
export interface ToolResult {
  callId: string;
  /** The tool the assistant called under `callId`, when the history still shows that call. */
  toolName?: string;
  output: string;
}

/**
 * What a request means to a script, independent of its protocol: the last thing the user really said
 * and what happened since.
 */
export interface Conversation {
  protocol: Protocol;
  model: string;
  /** Every system, developer and `instructions` text, joined. */
  system: string;
  /** The last real user text (injected context skipped, wrapping double quotes removed); '' when none. */
  userText: string;
  /** The real user texts before it, oldest first: the earlier turns of a resumed conversation. */
  earlierUserTexts: string[];
  /** Tool results that follow that user text, oldest first. */
  toolResults: ToolResult[];
  /** How many rounds of tool results follow the user text: the step a scripted reply is at. */
  toolRounds: number;
  tools: ConversationToolSpec[];
  /** The working directory the CLI announced in its prompt, when it announced one. */
  cwd?: string;
}

/**
 * A protocol-neutral view of a request's history, from which {@link summarize} builds a
 * {@link Conversation}. Each protocol module maps its own messages onto these.
 */
export type Entry =
  | { kind: 'user'; texts: string[] }
  | { kind: 'assistant'; toolCalls: Array<{ id: string; name: string }> }
  | { kind: 'toolResult'; callId: string; output: string };
