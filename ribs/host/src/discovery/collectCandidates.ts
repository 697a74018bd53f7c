import type { Rib } from '@keelson/ribs-contract';
import type { WarningSink } from '../warnings';
import { ribShapeProblems } from './checkRibShape';
import { discoverInstalledRibs } from './discoverInstalledRibs';
import type { RibCandidate } from './ribCandidate';

/** Where candidates come from. */
export interface CollectOptions {
  /** An explicit manifest (tests, embedders): key → rib. */
  available?: Readonly<Record<string, unknown>>;
  /** Scan `roots` for installed `@keelson/rib-*` packages. */
  discover: boolean;
  roots: readonly string[];
  warn: WarningSink;
}

/**
 * Discovery: the explicit `available` map (in its order) and the installed packages (in name
 * order), each shape-checked. A shape failure (bad id or displayName, a hook that is not a
 * function, an import that throws) is one warning and a skipped rib. Among installed packages, a
 * second package declaring an id already taken is a duplicate: warned and skipped. (A key present
 * in both the map and the installed packages is left for activation, where a duplicate id fails boot.)
 */
export function collectCandidates(opts: CollectOptions): RibCandidate[] {
  const candidates: RibCandidate[] = [];
  const skip = (key: string, problems: string[]) =>
    opts.warn({ stage: 'discovery', rule: 'shape', ribId: key, message: `rib '${key}' skipped: ${problems.join('; ')}` });

  for (const [key, value] of Object.entries(opts.available ?? {})) {
    const problems = ribShapeProblems(key, value);
    if (problems.length > 0) skip(key, problems);
    else candidates.push({ key, rib: value as Rib, source: 'available', workflowFiles: [] });
  }

  if (opts.discover) {
    const declared = new Map<string, string>();
    for (const pkg of discoverInstalledRibs(opts.roots, opts.warn)) {
      const problems = ribShapeProblems(pkg.key, pkg.exported);
      if (problems.length > 0) {
        skip(pkg.key, problems);
        continue;
      }
      const rib = pkg.exported as Rib;
      const holder = declared.get(rib.id);
      if (holder !== undefined) {
        opts.warn({ stage: 'discovery', rule: 'duplicate-id', ribId: rib.id, message: `${pkg.packageName} declares id '${rib.id}', already declared by ${holder}; skipped` });
        continue;
      }
      declared.set(rib.id, pkg.packageName);
      candidates.push({ key: pkg.key, rib, source: 'discovered', packageName: pkg.packageName, packageDir: pkg.packageDir, workflowFiles: pkg.workflowFiles });
    }
  }
  return candidates;
}
