import { jwtSettingsFromEnv, type JwtSettings } from '@keelson/identity';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { expandHome, parseEnv } from '@keelson/schema';
import { meshSecurityFromEnv, type MeshSecurity } from '@keelson/service';

export interface IdentityConfig {
  databaseUrl: string;
  host: string;
  port: number;
  security: MeshSecurity;
  jwt?: JwtSettings;
  /** The service keeps the local admin token in `<KEELSON_HOME>/token`. */
  adminTokenHome: string;
  logLevel: string;
}

/** The one place the identity subgraph reads process.env. */
export function loadIdentityConfig(env: NodeJS.ProcessEnv = process.env): IdentityConfig {
  const e = parseEnv(env);
  const jwt = jwtSettingsFromEnv(e);
  return {
    databaseUrl: e.DATABASE_URL,
    host: e.KEELSON_HOST,
    port: e.KEELSON_IDENTITY_PORT,
    security: meshSecurityFromEnv(e),
    ...(jwt ? { jwt } : {}),
    adminTokenHome: expandHome(e.KEELSON_HOME ?? join(homedir(), '.keelson'), homedir()),
    logLevel: e.KEELSON_LOG_LEVEL,
  };
}
