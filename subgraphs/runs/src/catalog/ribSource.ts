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
