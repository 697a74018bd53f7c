import { subgraphServiceConfig, type SubgraphServiceConfig } from '@keelson/kit';
import { homedir } from 'node:os';
import { resolveBusSetup, type SwarmsSettings } from '@keelson/swarms';
import { keelsonHome, parseEnv, type MeshEnv } from '@keelson/schema';

export interface SwarmsConfig extends SubgraphServiceConfig {
  settings: SwarmsSettings;
  /** How often the bus is compared for capabilitiesChanged (KEELSON_CAPABILITY_POLL_MS). */
  capabilityPollMs: number;
}

/** Resolves the swarms domain's settings from the environment (`raw` carries the CLICKCLACK_* variables). */
export function swarmsSettings(
  e: MeshEnv,
  raw: Record<string, string | undefined>,
  opts: { userHome?: string; temporal?: SwarmsSettings['temporal']; projectsUrl?: string } = {},
): SwarmsSettings {
  const userHome = opts.userHome ?? homedir();
  const home = keelsonHome(e, userHome);
  return {
    home,
    bus: resolveBusSetup(raw, home),
    env: raw,
    temporal: opts.temporal ?? { address: e.TEMPORAL_ADDRESS ?? `127.0.0.1:${e.KEELSON_TEMPORAL_PORT}`, namespace: e.TEMPORAL_NAMESPACE, taskQueue: e.TEMPORAL_TASK_QUEUE, ...(e.TEMPORAL_UI_URL ? { uiUrl: e.TEMPORAL_UI_URL } : {}) },
    projectsUrl: opts.projectsUrl ?? e.KEELSON_PROJECTS_URL ?? `http://127.0.0.1:${e.KEELSON_PROJECTS_PORT}/graphql`,
    heartbeatTimeoutMs: Math.min(e.KEELSON_RUN_HEARTBEAT_TIMEOUT_MS, 10_000),
  };
}

/** The one place the swarms subgraph reads process.env. */
export function loadSwarmsConfig(env: NodeJS.ProcessEnv = process.env): SwarmsConfig {
  const e = parseEnv(env);
  return {
    ...subgraphServiceConfig(e, e.KEELSON_SWARMS_PORT),
    settings: swarmsSettings(e, env),
    capabilityPollMs: e.KEELSON_CAPABILITY_POLL_MS,
  };
}
