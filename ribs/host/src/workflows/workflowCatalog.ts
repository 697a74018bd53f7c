import type { SnapshotFrame } from '@keelson/ribs-contract';

/** A workflow a rib contributed, with its provenance. */
export interface RibWorkflowEntry {
  name: string;
  ribId: string;
  /** `code` from `contributeWorkflows`, `yaml` from the package's `workflows/` folder. */
  origin: 'code' | 'yaml';
  /** Unvalidated: the workflow loader (runs issue) validates it when it merges. */
  definition: unknown;
  description?: string;
  /** The YAML file, for `yaml` entries. */
  path?: string;
  /** The YAML text, for `yaml` entries. */
  source?: string;
  /** Where the run's structured output republishes (code entries only). */
  bindSnapshotKey?: string;
  /** Publishes a run's output to `bindSnapshotKey` through its validator. */
  publish?: (value: unknown) => Promise<SnapshotFrame | undefined>;
}

/** The name and description a definition declares, when it does. */
export function describeDefinition(definition: unknown): { name?: string; description?: string } {
  if (typeof definition !== 'object' || definition === null) return {};
  const { name, description } = definition as { name?: unknown; description?: unknown };
  return {
    ...(typeof name === 'string' && name.trim() !== '' ? { name: name.trim() } : {}),
    ...(typeof description === 'string' ? { description } : {}),
  };
}

/**
 * The rib workflows of the catalog, merged as the seed says: within a rib its code entry wins over
 * its own YAML file of the same name; across ribs the earlier-activated rib's entry is kept. The
 * returned `shadowed` entries lost and are worth a warning. (Bundled, global and project scopes
 * overriding rib entries is the workflow loader's merge.)
 */
export function mergeRibWorkflows(perRib: readonly RibWorkflowEntry[][]): {
  entries: RibWorkflowEntry[];
  shadowed: { entry: RibWorkflowEntry; by: RibWorkflowEntry }[];
} {
  const byName = new Map<string, RibWorkflowEntry>();
  const shadowed: { entry: RibWorkflowEntry; by: RibWorkflowEntry }[] = [];
  for (const entries of perRib) {
    const own = new Map<string, RibWorkflowEntry>();
    const codeFirst = [...entries.filter((e) => e.origin === 'code'), ...entries.filter((e) => e.origin === 'yaml')];
    for (const entry of codeFirst) {
      const kept = own.get(entry.name);
      if (kept) shadowed.push({ entry, by: kept });
      else own.set(entry.name, entry);
    }
    for (const entry of own.values()) {
      const kept = byName.get(entry.name);
      if (kept) shadowed.push({ entry, by: kept });
      else byName.set(entry.name, entry);
    }
  }
  return { entries: [...byName.values()], shadowed };
}
