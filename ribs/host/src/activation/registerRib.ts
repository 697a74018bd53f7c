import { describeZodError } from '@keelson/schema';
import { isInRibNamespace, ribDocsSourceSchema, ribNamespace, type Policy } from '@keelson/ribs-contract';
import type { RibCandidate } from '../discovery/ribCandidate';
import type { DocsCatalog } from '../docs/docsCatalog';
import { errorMessage, RibActivationError } from '../errors';
import type { PolicyEngine } from '../policy/policyEngine';
import type { ScopedSnapshotManager } from '../snapshots/scopedSnapshotManager';
import type { SnapshotHub } from '../snapshots/snapshotHub';
import type { ToolRegistry } from '../tools/toolRegistry';
import type { WarningSink } from '../warnings';
import { describeDefinition, type RibWorkflowEntry } from '../workflows/workflowCatalog';
import type { ActiveRib } from './activeRib';

/** The shared stores a rib registers into. */
export interface RegisterDeps {
  registry: ToolRegistry;
  hub: SnapshotHub;
  docs: DocsCatalog;
  policies: PolicyEngine;
  warn: WarningSink;
}

/** What registering one rib produced. */
export interface Registered {
  workflows: RibWorkflowEntry[];
  /** Settles when the rib's warm-up recomposes have. */
  warm: Promise<void>;
}

function runHook<T>(ribId: string, hook: string, run: () => T): T {
  let value: T;
  try {
    value = run();
  } catch (err) {
    throw new RibActivationError(ribId, 'activation-hook', `${hook} threw: ${errorMessage(err)}`);
  }
  if (!Array.isArray(value)) throw new RibActivationError(ribId, 'activation-hook', `${hook} did not return an array`);
  return value;
}

function policyProblem(policy: unknown): string | undefined {
  if (typeof policy !== 'object' || policy === null) return 'a policy is an object';
  const p = policy as Partial<Policy>;
  if (typeof p.id !== 'string' || p.id.trim() === '') return 'a policy has a non-empty id';
  if (typeof p.evaluate !== 'function') return `policy '${p.id}' has no evaluate function`;
  if (p.on !== undefined && !Array.isArray(p.on)) return `policy '${p.id}': on is not an array`;
  return undefined;
}

/**
 * Lifecycle step 4 for one rib, in the seed's order: `registerTools` (its tools join the shared
 * registry; a collision or a malformed tool is skipped with a warning), then `composeBundle` as the
 * lazy composer under `rib.id` (the key `rib:<id>`) (and any warm-up asked for in `registerTools` runs), then
 * `contributeWorkflows` and the package's YAML workflows, `contributeDocs` and `contributePolicies`.
 * A throwing hook, or a workflow bound to a key outside the namespace, fails boot.
 */
export function registerRib(entry: ActiveRib, candidate: RibCandidate, snapshots: ScopedSnapshotManager, deps: RegisterDeps): Registered {
  const { rib, ctx, id } = entry;

  if (rib.registerTools) {
    for (const tool of runHook(id, 'registerTools', () => rib.registerTools!(ctx))) {
      const rejection = deps.registry.register(tool, id);
      if (rejection) deps.warn({ stage: 'activation', rule: rejection.rule, ribId: id, message: rejection.message });
    }
  }

  if (rib.composeBundle) deps.hub.register(id, ribNamespace(id), () => rib.composeBundle!(ctx));
  const warm = snapshots.endActivation();

  const workflows: RibWorkflowEntry[] = [];
  if (rib.contributeWorkflows) {
    for (const contribution of runHook(id, 'contributeWorkflows', () => rib.contributeWorkflows!(ctx))) {
      if (typeof contribution !== 'object' || contribution === null) {
        deps.warn({ stage: 'activation', rule: 'workflow-shape', ribId: id, message: 'skipped a workflow contribution that is not an object' });
        continue;
      }
      const { name, description } = describeDefinition(contribution.definition);
      if (name === undefined) {
        deps.warn({ stage: 'activation', rule: 'workflow-shape', ribId: id, message: 'skipped a workflow contribution whose definition has no name' });
        continue;
      }
      const key = contribution.bindSnapshotKey;
      if (key !== undefined) {
        if (typeof key !== 'string' || !isInRibNamespace(id, key)) {
          throw new RibActivationError(id, 'namespace', `workflow '${name}' binds snapshot key '${String(key)}' outside the rib's namespace (rib:${id} or rib:${id}:*)`);
        }
        if (contribution.validate !== undefined && typeof contribution.validate !== 'function') {
          throw new RibActivationError(id, 'activation-hook', `workflow '${name}': validate is not a function`);
        }
        if (contribution.validate) deps.hub.bindValidator(key, contribution.validate);
      }
      workflows.push({
        name,
        ribId: id,
        origin: 'code',
        definition: contribution.definition,
        ...(description !== undefined ? { description } : {}),
        ...(key !== undefined ? { bindSnapshotKey: key, publish: (value: unknown) => snapshots.publish(key, value) } : {}),
      });
    }
  }
  for (const file of candidate.workflowFiles) {
    workflows.push({
      name: file.name,
      ribId: id,
      origin: 'yaml',
      definition: file.definition,
      path: file.path,
      source: file.text,
      ...(file.description !== undefined ? { description: file.description } : {}),
    });
  }

  if (rib.contributeDocs) {
    for (const source of runHook(id, 'contributeDocs', () => rib.contributeDocs!(ctx))) {
      const parsed = ribDocsSourceSchema.safeParse(source);
      if (parsed.success) deps.docs.add(id, parsed.data);
      else deps.warn({ stage: 'activation', rule: 'docs-source', ribId: id, message: `skipped a docs source: ${describeZodError(parsed.error, 'source')}` });
    }
  }

  if (rib.contributePolicies) {
    for (const policy of runHook(id, 'contributePolicies', () => rib.contributePolicies!(ctx))) {
      const problem = policyProblem(policy);
      if (problem) deps.warn({ stage: 'activation', rule: 'policy-shape', ribId: id, message: `skipped a policy: ${problem}` });
      else deps.policies.add(policy, id);
    }
  }

  return { workflows, warm };
}
