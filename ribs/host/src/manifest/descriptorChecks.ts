import {
  isInRibNamespace,
  layoutRegions,
  ribSurfaceDescriptorSchema,
  ribViewDescriptorSchema,
  type Rib,
  type RibSurfaceDescriptor,
  type RibViewDescriptor,
} from '@keelson/ribs-contract';
import { describeIssues, errorMessage } from '../errors';

/** A descriptor that passed, or the rule it broke. */
export type Checked<T> = { ok: true; value: T } | { ok: false; rule: 'descriptor-shape' | 'namespace'; message: string };

function outside(ribId: string, what: string, key: string): string {
  return `${what} '${key}' is outside the rib's namespace (rib:${ribId} or rib:${ribId}:*)`;
}

/** Parses a view descriptor and checks its key is in the rib's namespace. */
export function checkView(ribId: string, view: unknown): Checked<RibViewDescriptor> {
  const parsed = ribViewDescriptorSchema.safeParse(view);
  if (!parsed.success) return { ok: false, rule: 'descriptor-shape', message: `malformed view: ${describeIssues(parsed.error, 'view')}` };
  if (!isInRibNamespace(ribId, parsed.data.key)) return { ok: false, rule: 'namespace', message: outside(ribId, 'view key', parsed.data.key) };
  return { ok: true, value: parsed.data };
}

/** Parses a surface descriptor and checks every region key (and its badge key) is in the rib's namespace. */
export function checkSurface(ribId: string, surface: unknown): Checked<RibSurfaceDescriptor> {
  const parsed = ribSurfaceDescriptorSchema.safeParse(surface);
  if (!parsed.success) {
    const id = typeof (surface as { id?: unknown } | null)?.id === 'string' ? ` '${(surface as { id: string }).id}'` : '';
    return { ok: false, rule: 'descriptor-shape', message: `malformed surface${id}: ${describeIssues(parsed.error, 'surface')}` };
  }
  const s = parsed.data;
  for (const { slot, region } of layoutRegions(s.layout)) {
    if (!isInRibNamespace(ribId, region.key)) {
      return { ok: false, rule: 'namespace', message: `surface '${s.id}': ${outside(ribId, `${slot} region key`, region.key)}` };
    }
  }
  if (s.badgeKey !== undefined && !isInRibNamespace(ribId, s.badgeKey)) {
    return { ok: false, rule: 'namespace', message: `surface '${s.id}': ${outside(ribId, 'badgeKey', s.badgeKey)}` };
  }
  return { ok: true, value: s };
}

/**
 * Reads `rib.views` or `rib.surfaces` defensively (a rib may hold them live, even behind a getter):
 * absent is empty; anything but an array is a problem.
 */
export function readDescriptorList(rib: Rib, field: 'views' | 'surfaces'): { items: readonly unknown[] } | { problem: string } {
  let value: unknown;
  try {
    value = rib[field];
  } catch (err) {
    return { problem: `reading ${field} threw: ${errorMessage(err)}` };
  }
  if (value === undefined) return { items: [] };
  if (!Array.isArray(value)) return { problem: `${field} is not an array` };
  return { items: [...value] };
}
