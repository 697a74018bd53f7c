import type { CallToolFailureReason, CallToolOptions, CallToolResult } from '@keelson/ribs-contract';
import { isCrossRibCallGranted, type CrossRibGrants } from '../config/grants';
import type { ToolRegistry } from './toolRegistry';
import type { ToolRunner, ToolRunStatus } from './toolRunner';

/** What a cross-rib call needs from the host. */
export interface CrossRibCallerDeps {
  registry: ToolRegistry;
  runner: ToolRunner;
  grants: () => CrossRibGrants;
  isActive: (ribId: string) => boolean;
  /** `KEELSON_CROSS_RIB_CALL_TIMEOUT_MS`. */
  defaultTimeoutMs: number;
}

const reasonOf: Record<Exclude<ToolRunStatus, 'ok'>, CallToolFailureReason> = {
  'tool-error': 'tool-error',
  'unknown-tool': 'unknown-tool',
  'invalid-input': 'invalid-input',
  'policy-denied': 'policy-denied',
  cancelled: 'cancelled',
  timeout: 'timeout',
};

/**
 * A governed call from one rib to a tool another rib owns. Denied by default: an operator grant
 * must clear `caller:target:tool` (or `caller:target:*`). The tool's policies then run as on any
 * call (surface `rib`, with `ribId` and `targetRibId`). The whole call is bounded by
 * `opts.timeoutMs` (else `KEELSON_CROSS_RIB_CALL_TIMEOUT_MS`) and `opts.signal`, and it resolves
 * `{ ok: false, reason }` instead of throwing. A rib calling its own tool needs no grant.
 */
export async function callRibTool(
  deps: CrossRibCallerDeps,
  callerRibId: string,
  targetRibId: string,
  name: string,
  args: unknown,
  opts: CallToolOptions = {},
): Promise<CallToolResult> {
  const fail = (reason: CallToolFailureReason, error: string): CallToolResult => ({ ok: false, reason, error });
  if (!deps.isActive(targetRibId)) return fail('unknown-rib', `no active rib '${targetRibId}'`);
  const tool = deps.registry.get(name);
  if (!tool) return fail('unknown-tool', `no tool named '${name}' is registered`);
  if (tool.ownerRibId !== targetRibId) return fail('not-owned', `tool '${name}' is not owned by rib '${targetRibId}'`);
  if (callerRibId !== targetRibId && !isCrossRibCallGranted(deps.grants(), callerRibId, targetRibId, name)) {
    return fail('not-granted', `rib '${callerRibId}' has no grant for ${callerRibId}:${targetRibId}:${name} (crossRibGrants or KEELSON_CROSS_RIB_GRANTS)`);
  }
  const timeoutMs = opts.timeoutMs !== undefined && Number.isFinite(opts.timeoutMs) && opts.timeoutMs > 0 ? opts.timeoutMs : deps.defaultTimeoutMs;
  const outcome = await deps.runner.run({
    name,
    input: args,
    surface: 'rib',
    callerRibId,
    targetRibId,
    signal: opts.signal,
    timeoutMs,
  });
  if (outcome.status === 'ok') return { ok: true, content: outcome.content, chunks: outcome.chunks };
  return fail(reasonOf[outcome.status], outcome.content);
}
