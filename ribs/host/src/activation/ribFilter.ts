import { ribIdSchema } from '@keelson/ribs-contract';
import type { RibCandidate } from '../discovery/ribCandidate';
import type { WarningSink } from '../warnings';

/**
 * Applies `KEELSON_RIBS`: unset activates every candidate (in discovery order); set, it activates
 * the named ones in the order named. Installed and active are distinct: a filtered-out rib stays
 * installed. A malformed or unknown id is operator input, so it is warned about, never fatal.
 */
export function applyRibFilter(candidates: readonly RibCandidate[], filter: readonly string[] | undefined, warn: WarningSink): RibCandidate[] {
  if (filter === undefined) return [...candidates];
  const active: RibCandidate[] = [];
  const named = new Set<string>();
  for (const id of filter) {
    if (named.has(id)) continue;
    named.add(id);
    const valid = ribIdSchema.safeParse(id);
    if (!valid.success) {
      warn({ stage: 'filter', rule: 'filter', message: `KEELSON_RIBS names '${id}', which is not a rib id (${valid.error.issues[0]?.message}); ignored` });
      continue;
    }
    const matching = candidates.filter((c) => c.key === id);
    if (matching.length === 0) {
      warn({ stage: 'filter', rule: 'filter', ribId: id, message: `KEELSON_RIBS names '${id}', which is not installed; ignored` });
      continue;
    }
    active.push(...matching);
  }
  return active;
}
