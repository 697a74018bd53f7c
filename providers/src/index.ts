// @keelson/providers: the provider registry and agent turns (Anthropic Messages and
// OpenAI-compatible Chat Completions, streaming, tool loops through the rib host).
export { createAgentTurns, NEUTRAL_CWD_DIR } from './agentTurns';
export type { AgentTurns, AgentTurnsOptions } from './agentTurns';
export { createAgentTurnSeams } from './seams/agentTurnSeams';
export type { AgentTurnSeams } from './seams/agentTurnSeams';
export { runAgentTurn, steerMessage, DEFAULT_MAX_TOKENS, DEFAULT_MAX_ROUNDS, DEFAULT_TURN_TIMEOUT_MS } from './turn/runAgentTurn';
export type { AgentTurnDeps, AgentTurnRequest } from './turn/runAgentTurn';
export { projectTools, isTextOnly } from './turn/turnTools';
export type { TurnToolHost, TurnToolRequest, ProjectedTools } from './turn/turnTools';

// Providers and their registry.
export { ProviderRegistry } from './registry/providerRegistry';
export type { ModelChoice } from './registry/providerRegistry';
export { createProviderRegistry, loadProviderRegistry, DEFAULT_MODELS } from './registry/createProviderRegistry';
export type { ProviderRegistryOptions } from './registry/createProviderRegistry';
export { providerConfigSchema, providerIdSchema, parseProviderEntries } from './registry/providerConfig';
export type { ProviderConfig } from './registry/providerConfig';
export { anthropicProvider, anthropicMessages, ANTHROPIC_MODEL_CLASSES, ANTHROPIC_VERSION } from './anthropic/anthropicProvider';
export type { AnthropicProviderOptions } from './anthropic/anthropicProvider';
export { openAiCompatibleProvider, chatMessages, OPENAI_MODEL_CLASSES } from './openai/openaiCompatibleProvider';
export type { OpenAiCompatibleProviderOptions } from './openai/openaiCompatibleProvider';
export { ProviderError } from './types';
export type {
  ModelProvider,
  ProviderCapabilities,
  ModelCallRequest,
  ModelCallEvent,
  CallStopReason,
  ToolSpec,
  ToolCall,
  TurnMessage,
  ReasoningBlock,
} from './types';
export { readSse } from './http/sse';
export type { SseEvent } from './http/sse';

// The usage ledger and sessions (Postgres; tables in the runs migration list).
export { PgUsageLedger, InMemoryUsageLedger } from './ledger/usageLedger';
export type { UsageLedger, UsageRecord, UsageRow } from './ledger/usageLedger';
export { PgSessionStore, InMemorySessionStore } from './sessions/sessionStore';
export type { SessionStore, StoredSession } from './sessions/sessionStore';
export { AgentTurnTables1764460800320 } from './ledger/agentTurnTables.migration';
export type { Queryable } from './ledger/queryable';
