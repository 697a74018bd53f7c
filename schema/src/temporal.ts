/** Names shared by the worker, the client helpers and the subgraphs that start workflows. */
export const TASK_QUEUE = 'keelson-mesh';

export const workflowTypes = {
  /** The proof workflow: one activity round trip, proves the pipe end to end. */
  echo: 'echoWorkflow',
} as const;

/**
 * Custom search attributes every mesh workflow sets, registered on the dev server at start
 * (`--search-attribute Name=Keyword`) and by `temporal operator search-attribute create` elsewhere.
 */
export const searchAttributes = {
  rib: 'KeelsonRib',
  workflowName: 'KeelsonWorkflowName',
  project: 'KeelsonProject',
  kind: 'KeelsonKind',
} as const;

export type SearchAttributeName = (typeof searchAttributes)[keyof typeof searchAttributes];
