import type { ToolReachability } from '@keelson/ribs-contract';
import { isCrossRibCallGranted, type CrossRibGrants } from '../config/grants';
import type { ToolRegistry } from './toolRegistry';

/**
 * The operator floor for tools a rib's turn names: `unregistered` (no such tool: the name still
 * rides as an allow-list entry), then `cross-rib-denied` (another rib owns it and no grant clears
 * it), then `denylisted`, else `reachable`. It does not run policies. Synchronous and non-throwing.
 */
export function toolReachability(
  registry: ToolRegistry,
  grants: CrossRibGrants,
  denylist: ReadonlySet<string>,
  ribId: string,
  names: readonly string[],
): ToolReachability[] {
  return names.map((name) => {
    const tool = registry.get(name);
    if (!tool) return { name, status: 'unregistered' };
    const owner = tool.ownerRibId ? { ownerRibId: tool.ownerRibId } : {};
    if (tool.ownerRibId && tool.ownerRibId !== ribId && !isCrossRibCallGranted(grants, ribId, tool.ownerRibId, name)) {
      return { name, status: 'cross-rib-denied', ...owner };
    }
    if (denylist.has(name)) return { name, status: 'denylisted', ...owner };
    return { name, status: 'reachable', ...owner };
  });
}
