import type { RibHost } from '@keelson/host';

/**
 * A workflow a rib contributes (seed 000 `contributeWorkflows` and the rib package's `workflows/`
 * folder), unvalidated: the catalog validates it like every other source.
 */
export interface RibWorkflowCandidate {
  ribId: string;
  /** `code` from contributeWorkflows, `yaml` from the package's workflows/ folder. */
  origin: 'code' | 'yaml';
  definition: unknown;
  /** The YAML file of a `yaml` entry. */
  path?: string;
  /** The YAML text of a `yaml` entry. */
  source?: string;
}

/**
 * Where rib contributions come from (the rib host implements it). `list()` returns every candidate of
 * every active rib, ribs in activation order; within a rib, order does not matter.
 */
export interface RibWorkflowSource {
  list(): readonly RibWorkflowCandidate[] | Promise<readonly RibWorkflowCandidate[]>;
}

type WorkflowsOf = Pick<RibHost, 'workflows'>;

function candidatesOf(host: WorkflowsOf) {
  return host.workflows().map((e) => ({
    ribId: e.ribId,
    origin: e.origin,
    definition: e.definition,
    ...(e.path ? { path: e.path } : {}),
    ...(e.source ? { source: e.source } : {}),
  }));
}

/**
 * `Rib.workflows` and the catalog's rib scope: every active rib's contributions (code and YAML), from
 * a host, or from one activated on demand (a function resolving it; a rejection fails that catalog read).
 */
export function ribWorkflowSource(host: WorkflowsOf | (() => Promise<WorkflowsOf>)): RibWorkflowSource {
  return { list: typeof host === 'function' ? async () => candidatesOf(await host()) : () => candidatesOf(host) };
}
