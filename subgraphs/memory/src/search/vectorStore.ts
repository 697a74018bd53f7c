import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import type { MemorySettings } from '../settings';
import { EmbeddingsClient, toVectorLiteral } from './embeddings';

export type SearchMode = 'LEXICAL' | 'HYBRID';

/** Which search is active, and why (`memorySearchMode`). */
export interface SearchModeInfo {
  mode: SearchMode;
  /** pgvector is installable on the server (`pg_available_extensions`). */
  vectorExtensionAvailable: boolean;
  embeddingsConfigured: boolean;
  embeddingModel: string | null;
  reason: string;
}

/**
 * The optional vector store. pgvector is an optional server package, so it is not a migration (a
 * migration runs once; the extension may be installed later): it is created here, idempotently and
 * under an advisory lock, at boot when the extension is available and an embeddings endpoint is
 * configured. Vectors have no fixed dimension (one model per row), so search is exact (no ANN index).
 */
async function ensureVectorStore(dataSource: DataSource): Promise<void> {
  await dataSource.transaction(async (m) => {
    await m.query("SELECT pg_advisory_xact_lock(hashtext('keelson-memory-vector-store'))");
    await m.query('CREATE EXTENSION IF NOT EXISTS vector');
    await m.query(EMBEDDINGS_TABLE_DDL);
  });
}

/** The vectors of messages and summaries, one per item and model. */
export const EMBEDDINGS_TABLE_DDL = `CREATE TABLE IF NOT EXISTS memory_embeddings (
  item_kind text NOT NULL CHECK (item_kind IN ('message', 'summary')),
  item_id bigint NOT NULL,
  model text NOT NULL,
  embedding vector NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (item_kind, item_id, model)
)`;

/**
 * Decides the search mode: HYBRID (full text + trigram + vector) when pgvector is available and an
 * embeddings endpoint is configured, LEXICAL (full text + trigram) otherwise, with the reason.
 */
export async function detectSearchMode(dataSource: DataSource, settings: MemorySettings, log: Logger): Promise<SearchModeInfo> {
  const available = ((await dataSource.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")) as unknown[]).length > 0;
  const embeddingModel = settings.embeddings?.model ?? null;
  const base = { vectorExtensionAvailable: available, embeddingsConfigured: !!settings.embeddings, embeddingModel };
  if (!available) {
    return {
      ...base,
      mode: 'LEXICAL',
      reason: 'lexical: pgvector is not installed on the Postgres server (Debian: postgresql-15-pgvector)' +
        (settings.embeddings ? '' : `; and ${settings.embeddingsMissing ?? 'no embeddings endpoint is configured'}`),
    };
  }
  if (!settings.embeddings) return { ...base, mode: 'LEXICAL', reason: `lexical: pgvector is available but ${settings.embeddingsMissing ?? 'no embeddings endpoint is configured'}` };
  try {
    await ensureVectorStore(dataSource);
  } catch (err) {
    log.warn({ err }, 'pgvector is available but the vector store could not be created; search stays lexical');
    return { ...base, mode: 'LEXICAL', reason: `lexical: pgvector is available but could not be enabled: ${(err as Error).message}` };
  }
  return { ...base, mode: 'HYBRID', reason: `hybrid: full text + trigram + pgvector (${settings.embeddings.model}), fused by reciprocal rank` };
}

/**
 * Embeds messages and summaries that have no vector for the model yet, oldest first, one batch.
 * Idempotent; driven by VectorIndexer after commits.
 * @returns how many items were embedded
 */
export async function embedPending(dataSource: DataSource, client: EmbeddingsClient, batch = 64): Promise<number> {
  const pending = (await dataSource.query(
    `SELECT kind, id, content FROM (
       SELECT 'message' AS kind, m.id, left(m.content, 8000) AS content FROM memory_messages m
       WHERE m.content <> '' AND NOT EXISTS (
         SELECT 1 FROM memory_embeddings e WHERE e.item_kind = 'message' AND e.item_id = m.id AND e.model = $1)
       UNION ALL
       SELECT 'summary', s.id, left(s.content, 8000) FROM memory_summaries s
       WHERE NOT EXISTS (SELECT 1 FROM memory_embeddings e WHERE e.item_kind = 'summary' AND e.item_id = s.id AND e.model = $1)
     ) p ORDER BY id LIMIT $2`,
    [client.model, batch],
  )) as { kind: string; id: string; content: string }[];
  if (!pending.length) return 0;
  const vectors = await client.embed(pending.map((p) => p.content));
  await dataSource.query(
    `INSERT INTO memory_embeddings (item_kind, item_id, model, embedding)
     SELECT kind, id, $1, v::vector FROM unnest($2::text[], $3::int8[], $4::text[]) AS u(kind, id, v)
     ON CONFLICT DO NOTHING`,
    [client.model, pending.map((p) => p.kind), pending.map((p) => p.id), vectors.map(toVectorLiteral)],
  );
  return pending.length;
}
