import type { RibCandidate } from '../discovery/ribCandidate';
import { RibActivationError } from '../errors';
import { checkSurface, checkView, readDescriptorList } from '../manifest/descriptorChecks';

/**
 * The activation checks, run over every active rib before any rib code runs. Each throws a
 * `RibActivationError` (boot fails): an id diverging from its manifest key (the package suffix or
 * the `available` key), a duplicate rib id, a malformed view or surface, a view, region or badge
 * key outside `rib:<id>` / `rib:<id>:*`, or a duplicate surface id. Returns each rib's surface ids.
 */
export function validateActivation(active: readonly RibCandidate[]): Map<string, Set<string>> {
  const surfaceIdsByRib = new Map<string, Set<string>>();
  for (const candidate of active) {
    const { rib, key } = candidate;
    if (rib.id !== key) {
      const where = candidate.packageName ? `its package ${candidate.packageName}` : `its manifest key '${key}'`;
      throw new RibActivationError(key, 'id-divergence', `declares id '${rib.id}', which diverges from ${where}`);
    }
    if (surfaceIdsByRib.has(rib.id)) throw new RibActivationError(rib.id, 'duplicate-id', `rib id '${rib.id}' is activated twice`);

    const views = readDescriptorList(rib, 'views');
    if ('problem' in views) throw new RibActivationError(rib.id, 'descriptor-shape', views.problem);
    for (const view of views.items) {
      const checked = checkView(rib.id, view);
      if (!checked.ok) throw new RibActivationError(rib.id, checked.rule, checked.message);
    }

    const surfaces = readDescriptorList(rib, 'surfaces');
    if ('problem' in surfaces) throw new RibActivationError(rib.id, 'descriptor-shape', surfaces.problem);
    const surfaceIds = new Set<string>();
    for (const surface of surfaces.items) {
      const checked = checkSurface(rib.id, surface);
      if (!checked.ok) throw new RibActivationError(rib.id, checked.rule, checked.message);
      if (surfaceIds.has(checked.value.id)) throw new RibActivationError(rib.id, 'duplicate-surface', `declares surface id '${checked.value.id}' twice`);
      surfaceIds.add(checked.value.id);
    }
    surfaceIdsByRib.set(rib.id, surfaceIds);
  }
  return surfaceIdsByRib;
}
