import { isBuiltinCodingTool, type RibHost } from '@keelson/host';
import { GRANT_ALL_TOOLS, type ToolReachabilityStatus } from '@keelson/ribs-contract';
import type { ToolSpec } from '../types';

/** What a turn needs of the rib host: the tool registry, execution with policies, the grants. */
export type TurnToolHost = Pick<RibHost, 'executeTool' | 'tool' | 'tools' | 'toolInputSchema' | 'toolReachability' | 'grants' | 'policies' | 'ribIds'>;

/** The tool names a turn asks for. */
export interface TurnToolRequest {
  tools?: readonly string[];
  allowedTools?: readonly string[];
  disallowedTools?: readonly string[];
}

/** The tools a turn offers the model, and the names it asked for that the floor dropped (with why). */
export interface ProjectedTools {
  specs: ToolSpec[];
  dropped: { name: string; status: Exclude<ToolReachabilityStatus, 'reachable'> }[];
}

/**
 * True when the turn names no tool list at all: it is locked to `allowedTools: []` (text-only), never
 * reaching ambient tools.
 */
export function isTextOnly(req: TurnToolRequest): boolean {
  return req.tools === undefined && req.allowedTools === undefined && req.disallowedTools === undefined;
}

function floorOf(host: TurnToolHost, callerRibId: string | undefined, name: string, denylist: ReadonlySet<string>): ToolReachabilityStatus {
  if (callerRibId && host.ribIds.includes(callerRibId)) return host.toolReachability(callerRibId, [name])[0]?.status ?? 'unregistered';
  const info = host.tool(name);
  if (!info) return 'unregistered';
  if (callerRibId && info.ownerRibId && info.ownerRibId !== callerRibId) {
    const granted = host.grants.crossRib()[callerRibId]?.[info.ownerRibId] ?? [];
    if (!granted.includes(name) && !granted.includes(GRANT_ALL_TOOLS)) return 'cross-rib-denied';
  }
  return denylist.has(name) ? 'denylisted' : 'reachable';
}

/**
 * Projects a turn's tools through the operator floor. Named tools (`tools` ∪ `allowedTools`, minus
 * `disallowedTools`) are offered when registered and reachable for the caller: its own tools, the
 * host's (the built-in coding tools `Read`, `Write`, `Edit`, `Glob`, `Grep`, `Bash` among them), and
 * a sibling rib's only when a cross-rib grant clears `caller:target:tool` (or `*`). With only
 * `disallowedTools`, the ambient set is the caller's own tools and the host's, minus the built-in
 * coding tools (each is offered only when named). A turn naming no list is text-only. Names this
 * mesh does not register are dropped as `unregistered`.
 */
export function projectTools(host: TurnToolHost | undefined, callerRibId: string | undefined, req: TurnToolRequest, denylist: ReadonlySet<string>): ProjectedTools {
  if (isTextOnly(req)) return { specs: [], dropped: [] };
  const disallowed = new Set(req.disallowedTools ?? []);
  const explicit = req.tools !== undefined || req.allowedTools !== undefined;
  const names = explicit
    ? [...new Set([...(req.tools ?? []), ...(req.allowedTools ?? [])])]
    : (host?.tools() ?? []).filter((t) => (t.ownerRibId === undefined && !isBuiltinCodingTool(t.name)) || t.ownerRibId === callerRibId).map((t) => t.name);
  const specs: ToolSpec[] = [];
  const dropped: ProjectedTools['dropped'] = [];
  for (const name of names) {
    if (disallowed.has(name)) continue;
    const status = host ? floorOf(host, callerRibId, name, denylist) : 'unregistered';
    if (status !== 'reachable') {
      dropped.push({ name, status });
      continue;
    }
    const info = host!.tool(name)!;
    specs.push({ name, description: info.description, inputSchema: host!.toolInputSchema(name) ?? { type: 'object', properties: {} } });
  }
  return { specs, dropped };
}
