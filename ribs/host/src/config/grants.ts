import { GRANT_ALL_TOOLS, type CrossRibGrantsMap } from '@keelson/ribs-contract';
import type { WarningSink } from '../warnings';
import type { KeelsonConfig } from './keelsonConfig';

/** Resolved cross-rib grants: caller → target → tool names (`*` = every tool the target owns). */
export type CrossRibGrants = ReadonlyMap<string, ReadonlyMap<string, ReadonlySet<string>>>;

/** Resolved per-rib workflow grants: rib → workflow names (`*` = every workflow). */
export type RibWorkflowGrants = ReadonlyMap<string, ReadonlySet<string>>;

function addNames<K>(map: Map<K, Set<string>>, key: K, names: readonly string[]): void {
  const clean = names.map((name) => name.trim()).filter((name) => name.length > 0);
  if (clean.length === 0) return;
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  for (const name of clean) set.add(name);
}

function addCrossRibGrant(grants: Map<string, Map<string, Set<string>>>, caller: string, target: string, names: readonly string[]): void {
  const c = caller.trim();
  const t = target.trim();
  if (!c || !t) return;
  let byTarget = grants.get(c);
  if (!byTarget) grants.set(c, (byTarget = new Map()));
  addNames(byTarget, t, names);
  if (byTarget.size === 0) grants.delete(c);
}

function envEntries(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(/[;\n]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
}

/**
 * Parses `KEELSON_CROSS_RIB_GRANTS`: entries `caller:target:tool[,tool…]` separated by `;` (or
 * newlines), `*` as the tool granting every tool the target owns. A malformed entry is warned about
 * and skipped; it never widens a grant.
 */
export function parseCrossRibGrantsEnv(raw: string | undefined, warn?: WarningSink): Map<string, Map<string, Set<string>>> {
  const grants = new Map<string, Map<string, Set<string>>>();
  for (const entry of envEntries(raw)) {
    const parts = entry.split(':').map((part) => part.trim());
    const [caller, target, tools] = parts;
    if (parts.length !== 3 || !caller || !target || !tools) {
      warn?.({ stage: 'activation', rule: 'grant-syntax', message: `KEELSON_CROSS_RIB_GRANTS: ignoring '${entry}' (expected caller:target:tool[,tool] or caller:target:*)` });
      continue;
    }
    addCrossRibGrant(grants, caller, target, tools.split(','));
  }
  return grants;
}

/**
 * The cross-rib grants in force: the config file's `crossRibGrants` unioned with
 * `KEELSON_CROSS_RIB_GRANTS`. A union, not an override: either source alone grants, neither revokes.
 */
export function resolveCrossRibGrants(config: KeelsonConfig, envRaw: string | undefined, warn?: WarningSink): CrossRibGrants {
  const grants = parseCrossRibGrantsEnv(envRaw, warn);
  for (const [caller, targets] of Object.entries(config.crossRibGrants ?? {})) {
    for (const [target, names] of Object.entries(targets)) addCrossRibGrant(grants, caller, target, names);
  }
  return grants;
}

/** True when a grant clears `caller:target:tool` (or `caller:target:*`). */
export function isCrossRibCallGranted(grants: CrossRibGrants, caller: string, target: string, tool: string): boolean {
  const names = grants.get(caller)?.get(target);
  return names !== undefined && (names.has(tool) || names.has(GRANT_ALL_TOOLS));
}

/** The wire/config shape of resolved grants (sorted, so equal grants serialize equally). */
export function serializeCrossRibGrants(grants: CrossRibGrants): CrossRibGrantsMap {
  const out: CrossRibGrantsMap = {};
  for (const caller of [...grants.keys()].sort()) {
    const byTarget: Record<string, string[]> = {};
    const targets = grants.get(caller)!;
    for (const target of [...targets.keys()].sort()) byTarget[target] = [...targets.get(target)!].sort();
    out[caller] = byTarget;
  }
  return out;
}

/**
 * Parses a per-rib workflow grant variable (`KEELSON_RIB_WORKFLOW_GRANTS`,
 * `KEELSON_RIB_APPROVAL_GRANTS`): entries `rib:workflow[,workflow…]` separated by `;`.
 */
export function parseRibWorkflowGrantsEnv(variable: string, raw: string | undefined, warn?: WarningSink): Map<string, Set<string>> {
  const grants = new Map<string, Set<string>>();
  for (const entry of envEntries(raw)) {
    const parts = entry.split(':').map((part) => part.trim());
    const [ribId, workflows] = parts;
    if (parts.length !== 2 || !ribId || !workflows) {
      warn?.({ stage: 'activation', rule: 'grant-syntax', message: `${variable}: ignoring '${entry}' (expected rib:workflow[,workflow] or rib:*)` });
      continue;
    }
    addNames(grants, ribId, workflows.split(','));
  }
  return grants;
}

/** A config map of per-rib workflow grants unioned with its env variable. */
export function resolveRibWorkflowGrants(
  config: Record<string, string[]> | undefined,
  variable: string,
  envRaw: string | undefined,
  warn?: WarningSink,
): RibWorkflowGrants {
  const grants = parseRibWorkflowGrantsEnv(variable, envRaw, warn);
  for (const [ribId, names] of Object.entries(config ?? {})) addNames(grants, ribId.trim(), names);
  return grants;
}

/** True when `ribId` is granted `workflowName` (or `*`). */
export function isRibWorkflowGranted(grants: RibWorkflowGrants, ribId: string, workflowName: string): boolean {
  const names = grants.get(ribId);
  return names !== undefined && (names.has(workflowName) || names.has(GRANT_ALL_TOOLS));
}
