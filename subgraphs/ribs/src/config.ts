import { subgraphServiceConfig, type SubgraphServiceConfig } from '@keelson/kit';
import { homedir } from 'node:os';
import { isLoopback, keelsonHome, parseEnv, type MeshEnv } from '@keelson/schema';
import type { RibsSettings } from './settings';

export interface RibsConfig extends SubgraphServiceConfig {
  settings: RibsSettings;
}

/** The one place the ribs subgraph reads process.env. */
export function loadRibsConfig(env: NodeJS.ProcessEnv = process.env): RibsConfig {
  const e = parseEnv(env);
  return {
    ...subgraphServiceConfig(e, e.KEELSON_RIBS_PORT),
    settings: ribsSettings(e, homedir(), env),
  };
}

/** Resolves the ribs subgraph's settings from parsed env (`raw` is what ribs and their processes see). */
export function ribsSettings(e: MeshEnv, userHome: string, raw: Record<string, string | undefined>): RibsSettings {
  const bound = e.KEELSON_HOST;
  const projectsHost = isLoopback(bound) || bound === '0.0.0.0' || bound === '::' ? '127.0.0.1' : bound.includes(':') ? `[${bound}]` : bound;
  return {
    home: keelsonHome(e, userHome),
    projectsUrl: e.KEELSON_PROJECTS_URL ?? `http://${projectsHost}:${e.KEELSON_PROJECTS_PORT}/graphql`,
    ...(e.KEELSON_CREDENTIALS_KEY ? { credentialsKey: e.KEELSON_CREDENTIALS_KEY } : {}),
    env: raw,
  };
}
