import type { MessageChunk, StopReason } from './chunks';

/** A model class a turn can ask for instead of a model. */
export type RibModelClass = 'fast' | 'balanced' | 'deep';

/** A reasoning-effort hint; reaches only providers that report support for it. */
export type RibReasoningEffort = 'none' | 'low' | 'medium' | 'high' | 'xhigh';

/** One agent turn a rib runs through the provider registry. */
export interface RibAgentTurnRequest {
  prompt: string;
  system?: string;
  /** A hint, not a pin. */
  provider?: string;
  /** Wins over `modelClass`. */
  model?: string;
  modelClass?: RibModelClass;
  reasoningEffort?: RibReasoningEffort;
  /** Tool names the turn may use; a turn naming none of tools/allowedTools/disallowedTools is text-only. */
  tools?: readonly string[];
  allowedTools?: readonly string[];
  disallowedTools?: readonly string[];
  abortSignal?: AbortSignal;
  timeoutMs?: number;
  /** Absent runs the turn in a neutral non-repo directory. */
  cwd?: string;
  /** Confinement roots enforced by `builtin:path_confinement`; empty or absent is unconfined. */
  allowedDirectories?: readonly string[];
  /** The previous result's `sessionId`, to continue that provider session. */
  resumeSessionId?: string;
  /** Forwarded verbatim to tool executions. */
  turnContext?: Readonly<Record<string, unknown>>;
}

/** Token usage a provider reported. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** The settled result of a turn: the source of truth for its text. */
export interface RibAgentTurnResult {
  status: 'ok' | 'aborted' | 'timeout' | 'error';
  text: string;
  error?: string;
  providerId?: string;
  model?: string;
  sessionId?: string;
  usage?: TokenUsage;
  stopReason: StopReason;
}

/** A settled dual handle: `stream` forwards live chunks, `result` settles once. */
export interface RibAgentTurn {
  stream: AsyncIterable<MessageChunk>;
  result: Promise<RibAgentTurnResult>;
}
