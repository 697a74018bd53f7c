import type { MeshEnv } from '@keelson/schema';
import { meshSecurityFromEnv, type MeshSecurity } from '@keelson/service';

/** What every subgraph process reads from the environment beside its own settings. */
export interface SubgraphServiceConfig {
  databaseUrl: string;
  host: string;
  port: number;
  security: MeshSecurity;
  logLevel: MeshEnv['KEELSON_LOG_LEVEL'];
}

/** The database, bind address, `port`, security and log level of a subgraph process, from parsed env. */
export function subgraphServiceConfig(e: MeshEnv, port: number): SubgraphServiceConfig {
  return {
    databaseUrl: e.DATABASE_URL,
    host: e.KEELSON_HOST,
    port,
    security: meshSecurityFromEnv(e),
    logLevel: e.KEELSON_LOG_LEVEL,
  };
}
