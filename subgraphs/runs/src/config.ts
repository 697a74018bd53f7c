import { meshSecurityFromEnv, type MeshSecurity } from '@keelson/service';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { expandHome, parseEnv, type MeshEnv } from '@keelson/schema';
import { bundledWorkflowsDir } from '@keelson/runs';
import type { RunsSettings } from './settings';

export interface RunsConfig {
  databaseUrl: string;
  host: string;
  port: number;
  security: MeshSecurity;
  logLevel: string;
  settings: RunsSettings;
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
    keelsonHome: expandHome(e.KEELSON_HOME ?? join(userHome, '.keelson'), userHome),
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

/** The one place the runs subgraph reads process.env. */
export function loadRunsConfig(env: NodeJS.ProcessEnv = process.env): RunsConfig {
  const e = parseEnv(env);
  return {
    databaseUrl: e.DATABASE_URL,
    host: e.KEELSON_HOST,
    port: e.KEELSON_RUNS_PORT,
    security: meshSecurityFromEnv(e),
    logLevel: e.KEELSON_LOG_LEVEL,
    settings: runsSettings(e),
  };
}
