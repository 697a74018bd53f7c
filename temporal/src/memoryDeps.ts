import { loadProviderRegistry, type ProviderRegistry } from '@keelson/providers';
import type { Logger, ServiceIdentity } from '@keelson/service';
import type { MemoryActivityDeps } from './activities';
import { memoryGraphqlApi } from './activities/memory/memoryApi';

export interface MemoryActivityDepsOptions {
  /** The memory subgraph's GraphQL endpoint (KEELSON_MEMORY_URL). */
  memoryUrl: string;
  /** Who the worker is to the memory subgraph (it refuses calls without an assertion). */
  identity: ServiceIdentity;
  /** Read for the providers (KEELSON_ANTHROPIC_* / KEELSON_OPENAI_* / KEELSON_MODEL_BASE_URL …). */
  env: Record<string, string | undefined>;
  /** The Keelson home: the config file's `providers`, `modelClasses`, `defaultProvider`. */
  home: string;
  log: Logger;
}

/**
 * What `memoryCompaction`'s activities reach: the memory subgraph by URL and the provider registry of
 * the environment and the config file, read on the first summary (a worker that writes none pays nothing).
 */
export function openMemoryActivityDeps(opts: MemoryActivityDepsOptions): MemoryActivityDeps {
  let registry: ProviderRegistry | undefined;
  return {
    api: memoryGraphqlApi(opts.memoryUrl, { identity: opts.identity }),
    registry: () => (registry ??= loadProviderRegistry({ home: opts.home, env: opts.env, warn: (message) => opts.log.warn(message) })),
    log: opts.log,
  };
}
