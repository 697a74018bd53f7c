import { z } from 'zod';
import type { ToolResultChunk } from './chunks';

/** Options of one cross-rib call. */
export interface CallToolOptions {
  /** Caller cancellation: aborting resolves `{ ok: false, reason: 'cancelled' }`. */
  signal?: AbortSignal;
  /** Overrides `KEELSON_CROSS_RIB_CALL_TIMEOUT_MS` for this call. */
  timeoutMs?: number;
}

/** Why a cross-rib call did not produce a result. */
export type CallToolFailureReason =
  | 'not-granted'
  | 'unknown-rib'
  | 'unknown-tool'
  | 'not-owned'
  | 'invalid-input'
  | 'policy-denied'
  | 'timeout'
  | 'cancelled'
  | 'tool-error';

/**
 * The outcome of `callTool`, never a throw: the tool's text result, or why there is none (a tool
 * that emitted `isError` reads as `tool-error` with its text as `error`).
 */
export type CallToolResult =
  | { ok: true; content: string; chunks: readonly ToolResultChunk[] }
  | { ok: false; error: string; reason: CallToolFailureReason };

/**
 * Would a tool name project onto a turn this rib runs? `unregistered` is not a denial (the name
 * rides as an allow-list entry; a provider built-in or a typo lands there); `cross-rib-denied` and
 * `denylisted` mean the operator floor drops it. Precedence: unregistered, cross-rib-denied, denylisted.
 */
export const toolReachabilityStatusSchema = z.enum(['reachable', 'unregistered', 'cross-rib-denied', 'denylisted']);
export type ToolReachabilityStatus = z.infer<typeof toolReachabilityStatusSchema>;

/** One pre-flight verdict. */
export interface ToolReachability {
  name: string;
  status: ToolReachabilityStatus;
  /** The owning rib, when a rib owns the tool. */
  ownerRibId?: string;
}

/**
 * The operator's grant map: caller rib id → target rib id → tool names (`*` = every tool the target
 * owns). The wire and config shape of `crossRibGrants`.
 */
export const crossRibGrantsSchema = z.record(
  z.string().min(1),
  z.record(z.string().min(1), z.array(z.string().min(1)).min(1, 'a grant names at least one tool (or *)')),
);
export type CrossRibGrantsMap = Record<string, Record<string, string[]>>;

/** The grant entry that clears every tool a target owns. */
export const GRANT_ALL_TOOLS = '*';
