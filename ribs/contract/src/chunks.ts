/** Why a turn stopped; `max_tokens` is how truncation is detected. */
export type StopReason = 'end' | 'max_tokens' | 'aborted' | 'timeout' | 'error';

/** The streaming unit of chat, agent turns and tool executions. */
export type MessageChunk =
  | { type: 'text'; text: string }
  | { type: 'tool_use'; toolUseId: string; name: string; input: unknown }
  | { type: 'tool_result'; toolUseId: string; content: string; isError?: boolean }
  | { type: 'error'; message: string }
  | { type: 'done'; stopReason?: StopReason };

/** The chunk a tool's `execute` emits its result as. */
export type ToolResultChunk = Extract<MessageChunk, { type: 'tool_result' }>;
