import { homedir } from 'node:os';
import { keelsonHome, type MeshEnv, type TemporalTarget } from '@keelson/schema';
import { bundledWorkflowsDir } from './catalog/catalog';
import type { RibWorkflowSource } from './catalog/ribSource';

/** What the runs domain needs from its environment (resolved once by {@link runsSettings}). */
export interface RunsSettings {
  /** KEELSON_HOME: `<home>/workflows` is the global scope; `<home>/runs/<id>/artifacts` each run's $ARTIFACTS_DIR; runs without a project work here. */
  keelsonHome: string;
  /** The bundled workflows (`runs/workflows`). */
  bundledWorkflowsDir: string;
  /** Where runs and ops start (no `uiUrl`: `temporalUiUrl` is null). */
  temporal: TemporalTarget;
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

/** Resolves the runs domain's settings from parsed env; `temporal` overrides where Temporal is (npm start's dev server). */
export function runsSettings(
  e: MeshEnv,
  opts: { userHome?: string; temporal?: { address: string; namespace?: string; uiUrl?: string }; projectsUrl?: string } = {},
): RunsSettings {
  const userHome = opts.userHome ?? homedir();
  const address = opts.temporal?.address ?? e.TEMPORAL_ADDRESS;
  if (!address) throw new Error('the runs subgraph needs Temporal: set TEMPORAL_ADDRESS (npm start passes its dev server)');
  return {
    keelsonHome: keelsonHome(e, userHome),
    bundledWorkflowsDir,
    temporal: {
      address,
      namespace: opts.temporal?.namespace ?? e.TEMPORAL_NAMESPACE,
      taskQueue: e.TEMPORAL_TASK_QUEUE,
      uiUrl: opts.temporal?.uiUrl ?? e.TEMPORAL_UI_URL,
    },
    projectsUrl: opts.projectsUrl ?? e.KEELSON_PROJECTS_URL ?? `http://127.0.0.1:${e.KEELSON_PROJECTS_PORT}/graphql`,
    heartbeatTimeoutMs: e.KEELSON_RUN_HEARTBEAT_TIMEOUT_MS,
  };
}
