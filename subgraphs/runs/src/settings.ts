import type { RibWorkflowSource } from '@keelson/runs';

/** What the runs domain needs from its environment (resolved once by config.ts). */
export interface RunsSettings {
  /** KEELSON_HOME: `<home>/workflows` is the global scope; `<home>/runs/<id>/artifacts` each run's $ARTIFACTS_DIR; runs without a project work here. */
  keelsonHome: string;
  /** The bundled workflows (`runs/workflows`). */
  bundledWorkflowsDir: string;
  temporal: {
    address: string;
    namespace: string;
    taskQueue: string;
    /** Base URL of the Temporal Web UI for `temporalUiUrl`; absent: the field is null. */
    uiUrl?: string;
  };
  /** The projects subgraph's GraphQL endpoint (project lookups and scopes). */
  projectsUrl: string;
  /** Heartbeat timeout of node activities and ops. */
  heartbeatTimeoutMs: number;
  /** Continue-as-new threshold handed to each run (tests lower it). @default Temporal's suggestion only */
  maxHistoryEvents?: number;
  /** How long respondToRun waits for the run's worker to answer the Update. @default 30000 */
  respondTimeoutMs?: number;
  /** Workflows contributed by ribs (wired by the rib host). @default none */
  ribWorkflows?: RibWorkflowSource;
}
