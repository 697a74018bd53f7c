import { subgraphServiceConfig, type SubgraphServiceConfig } from '@keelson/kit';
import { jwtSettingsFromEnv, type JwtSettings } from '@keelson/identity';
import { homedir } from 'node:os';
import { keelsonHome, parseEnv } from '@keelson/schema';

export interface IdentityConfig extends SubgraphServiceConfig {
  jwt?: JwtSettings;
  /** The service keeps the local admin token in `<KEELSON_HOME>/token`. */
  adminTokenHome: string;
  /** The audit trail's dated JSONL files go under `<KEELSON_HOME>/.data/audit/`. */
  auditHome: string;
}

/** The one place the identity subgraph reads process.env. */
export function loadIdentityConfig(env: NodeJS.ProcessEnv = process.env): IdentityConfig {
  const e = parseEnv(env);
  const jwt = jwtSettingsFromEnv(e);
  return {
    ...subgraphServiceConfig(e, e.KEELSON_IDENTITY_PORT),
    ...(jwt ? { jwt } : {}),
    adminTokenHome: keelsonHome(e, homedir()),
    auditHome: keelsonHome(e, homedir()),
  };
}
