import { subgraphServiceConfig, type SubgraphServiceConfig } from '@keelson/kit';
import { parseEnv } from '@keelson/schema';
import { runsSettings, type RunsSettings } from '@keelson/runs';

export interface RunsConfig extends SubgraphServiceConfig {
  settings: RunsSettings;
}

/** The one place the runs subgraph reads process.env. */
export function loadRunsConfig(env: NodeJS.ProcessEnv = process.env): RunsConfig {
  const e = parseEnv(env);
  return { ...subgraphServiceConfig(e, e.KEELSON_RUNS_PORT), settings: runsSettings(e) };
}
