import type { EventLog } from '@keelson/platform';
import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';

/** An OpenAI-compatible embeddings endpoint (`POST <url>/embeddings`). */
export interface EmbeddingsSettings {
  /** Base URL, e.g. `http://127.0.0.1:8080/v1`. */
  url: string;
  model: string;
  apiKey?: string;
  /** @default 10000 */
  timeoutMs: number;
  /**
   * The vector length requested (the API's `dimensions`) and required of every answer; set, vectors
   * are indexed (HNSW). Unset: whatever length the model returns, searched exactly.
   */
  dimensions?: number;
  /** A vector neighbour is a hit only with a cosine similarity above this. @default 0 */
  minSimilarity?: number;
}

/** What the memory domain needs from its environment (resolved once by config.ts). */
export interface MemorySettings {
  /** Set when KEELSON_EMBEDDINGS_URL and KEELSON_EMBEDDINGS_MODEL are; hybrid search also needs pgvector. */
  embeddings?: EmbeddingsSettings;
  /** Why no embeddings endpoint is configured (reported by `memorySearchMode`). */
  embeddingsMissing?: string;
}

export interface MemoryDeps {
  dataSource: DataSource;
  events: EventLog;
  settings: MemorySettings;
  log: Logger;
}
