import { subgraphServiceConfig, type SubgraphServiceConfig } from '@keelson/kit';
import { harnessSettings, type HarnessSettings } from '@keelson/harness';
import { parseEnv, type MeshEnv, type TemporalTarget } from '@keelson/schema';

export interface SessionsConfig extends SubgraphServiceConfig {
  settings: HarnessSettings;
  /** Where the projects subgraph answers (a project's root and worktrees). */
  projectsUrl: string;
  temporal: TemporalTarget | null;
  /** Heartbeat timeout of a task's CLI turn. */
  heartbeatTimeoutMs: number;
  /** Where answerApproval answers run gates and policy asks: the runs subgraph (KEELSON_RUNS_URL). */
  runsUrl: string;
  capabilityPollMs: number;
}

/** The projects subgraph's URL: KEELSON_PROJECTS_URL, else loopback on KEELSON_PROJECTS_PORT. */
export function projectsUrlOf(e: MeshEnv): string {
  return e.KEELSON_PROJECTS_URL ?? `http://127.0.0.1:${e.KEELSON_PROJECTS_PORT}/graphql`;
}

/** The one place the sessions subgraph reads process.env. */
export function loadSessionsConfig(env: NodeJS.ProcessEnv = process.env): SessionsConfig {
  const e = parseEnv(env);
  return {
    ...subgraphServiceConfig(e, e.KEELSON_SESSIONS_PORT),
    settings: harnessSettings(e, env),
    projectsUrl: projectsUrlOf(e),
    temporal: e.TEMPORAL_ADDRESS
      ? { address: e.TEMPORAL_ADDRESS, namespace: e.TEMPORAL_NAMESPACE, taskQueue: e.TEMPORAL_TASK_QUEUE, uiUrl: e.TEMPORAL_UI_URL }
      : null,
    heartbeatTimeoutMs: e.KEELSON_RUN_HEARTBEAT_TIMEOUT_MS,
    runsUrl: e.KEELSON_RUNS_URL ?? `http://127.0.0.1:${e.KEELSON_RUNS_PORT}/graphql`,
    capabilityPollMs: e.KEELSON_CAPABILITY_POLL_MS,
  };
}
