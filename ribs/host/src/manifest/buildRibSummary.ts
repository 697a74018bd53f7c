import type { RibAuthStatus, RibSummary, RibSurfaceDescriptor, RibViewDescriptor } from '@keelson/ribs-contract';
import type { ActiveRib } from '../activation/activeRib';
import type { ToolRegistry } from '../tools/toolRegistry';
import type { WarningSink } from '../warnings';
import { checkSurface, checkView, readDescriptorList } from './descriptorChecks';
import type { DynamicRegions } from './dynamicRegions';

/**
 * A rib's views as they read now: each re-parsed and namespace-checked; a malformed or
 * out-of-namespace one is dropped and warned about, so it cannot blank the manifest.
 */
export function liveViews(active: ActiveRib, warn?: WarningSink): RibViewDescriptor[] {
  const list = readDescriptorList(active.rib, 'views');
  if ('problem' in list) {
    warn?.({ stage: 'request', rule: 'descriptor-shape', ribId: active.id, message: `serving no views: ${list.problem}` });
    return [];
  }
  const views: RibViewDescriptor[] = [];
  for (const view of list.items) {
    const checked = checkView(active.id, view);
    if (checked.ok) views.push(checked.value);
    else warn?.({ stage: 'request', rule: checked.rule, ribId: active.id, message: `dropped a view: ${checked.message}` });
  }
  return views;
}

/**
 * A rib's surfaces as they read now, checked like views, with a duplicate surface id dropped (the
 * first is kept) and the surface's runtime regions appended as rows.
 */
export function liveSurfaces(active: ActiveRib, dynamic: DynamicRegions, warn?: WarningSink): RibSurfaceDescriptor[] {
  const list = readDescriptorList(active.rib, 'surfaces');
  if ('problem' in list) {
    warn?.({ stage: 'request', rule: 'descriptor-shape', ribId: active.id, message: `serving no surfaces: ${list.problem}` });
    return [];
  }
  const surfaces: RibSurfaceDescriptor[] = [];
  const ids = new Set<string>();
  for (const surface of list.items) {
    const checked = checkSurface(active.id, surface);
    if (!checked.ok) {
      warn?.({ stage: 'request', rule: checked.rule, ribId: active.id, message: `dropped a surface: ${checked.message}` });
      continue;
    }
    if (ids.has(checked.value.id)) {
      warn?.({ stage: 'request', rule: 'duplicate-surface', ribId: active.id, message: `dropped a second surface with id '${checked.value.id}'` });
      continue;
    }
    ids.add(checked.value.id);
    const runtimeRows = dynamic.rowsOf(active.id, checked.value.id);
    surfaces.push(
      runtimeRows.length === 0 ? checked.value : { ...checked.value, layout: { ...checked.value.layout, rows: [...checked.value.layout.rows, ...runtimeRows] } },
    );
  }
  return surfaces;
}

/** One rib's manifest entry, built now. */
export async function buildRibSummary(
  active: ActiveRib,
  deps: { registry: ToolRegistry; dynamic: DynamicRegions; warn: WarningSink; probe: (active: ActiveRib) => Promise<RibAuthStatus | undefined> },
): Promise<RibSummary> {
  const { rib, id } = active;
  const auth = await deps.probe(active);
  return {
    id,
    displayName: rib.displayName,
    registered: true,
    views: liveViews(active, deps.warn),
    surfaces: liveSurfaces(active, deps.dynamic, deps.warn),
    hasOnAction: typeof rib.onAction === 'function',
    acceptsIngest: rib.acceptsIngest === true,
    ...(auth !== undefined ? { auth } : {}),
    tools: deps.registry.ownedBy(id),
  };
}
