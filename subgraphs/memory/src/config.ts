import { subgraphServiceConfig, type SubgraphServiceConfig } from '@keelson/kit';
import { parseEnv } from '@keelson/schema';
import type { MemorySettings } from './settings';

export interface MemoryConfig extends SubgraphServiceConfig {
  settings: MemorySettings;
  /** Where capture reads transcript bodies: the sessions subgraph (KEELSON_SESSIONS_URL). */
  sessionsUrl: string;
  /** Where capture reads prompt-node turns: the runs subgraph (KEELSON_RUNS_URL). */
  runsUrl: string;
  /** How often the search mode is compared for capabilitiesChanged (KEELSON_CAPABILITY_POLL_MS). */
  capabilityPollMs: number;
}

/** The one place the memory subgraph reads process.env. */
export function loadMemoryConfig(env: NodeJS.ProcessEnv = process.env): MemoryConfig {
  const e = parseEnv(env);
  return {
    ...subgraphServiceConfig(e, e.KEELSON_MEMORY_PORT),
    settings: memorySettings(e),
    sessionsUrl: e.KEELSON_SESSIONS_URL ?? `http://127.0.0.1:${e.KEELSON_SESSIONS_PORT}/graphql`,
    runsUrl: e.KEELSON_RUNS_URL ?? `http://127.0.0.1:${e.KEELSON_RUNS_PORT}/graphql`,
    capabilityPollMs: e.KEELSON_CAPABILITY_POLL_MS,
  };
}

/** Resolves the memory domain's settings from parsed env. */
export function memorySettings(e: ReturnType<typeof parseEnv>): MemorySettings {
  if (!e.KEELSON_EMBEDDINGS_URL) return { embeddingsMissing: 'no embeddings endpoint is configured (KEELSON_EMBEDDINGS_URL)' };
  if (!e.KEELSON_EMBEDDINGS_MODEL) return { embeddingsMissing: 'KEELSON_EMBEDDINGS_URL is set but KEELSON_EMBEDDINGS_MODEL is not' };
  return {
    embeddings: {
      url: e.KEELSON_EMBEDDINGS_URL,
      model: e.KEELSON_EMBEDDINGS_MODEL,
      apiKey: e.KEELSON_EMBEDDINGS_API_KEY,
      timeoutMs: e.KEELSON_EMBEDDINGS_TIMEOUT_MS,
      minSimilarity: e.KEELSON_EMBEDDINGS_MIN_SIMILARITY,
      ...(e.KEELSON_EMBEDDINGS_DIMENSIONS ? { dimensions: e.KEELSON_EMBEDDINGS_DIMENSIONS } : {}),
    },
  };
}
