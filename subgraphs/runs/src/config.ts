import { meshSecurityFromEnv, type MeshSecurity } from '@keelson/service';
import { parseEnv } from '@keelson/schema';
import { runsSettings, type RunsSettings } from '@keelson/runs';

export interface RunsConfig {
  databaseUrl: string;
  host: string;
  port: number;
  security: MeshSecurity;
  logLevel: string;
  settings: RunsSettings;
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
