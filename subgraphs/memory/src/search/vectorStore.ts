import { createHash } from 'node:crypto';
import { withMaintenanceConnection } from '@keelson/platform';
import type { DataSource } from 'typeorm';
import type { EmbeddingsSettings } from '../settings';
import { EmbeddingsClient, toVectorLiteral } from './embeddings';

/** What the Postgres server offers for vectors (`pg_available_extensions`). */
export interface VectorExtensionProbe {
  /** pgvector's package is installed on the server: `CREATE EXTENSION vector` can find it. */
  available: boolean;
  /** The server's major version, for naming the package (`postgresql-<major>-pgvector`). */
  serverMajor: number;
}

/** The vector store HYBRID search reads and the indexer fills. */
export interface VectorStore {
  /**
   * `memory_embeddings.model` of this configuration: the model, plus `@<dimensions>` when a length is
   * requested. Vectors of different spaces are never compared, so changing either re-embeds.
   */
  space: string;
  /** The configured length, or null: whatever the model returns. */
  dimensions: number | null;
  /** `hnsw`: an HNSW index per item kind serves the space; `exact`: a scan over the space's vectors. */
  index: 'hnsw' | 'exact';
  /** pgvector's version in this database. */
  version: string;
}

/** pgvector version whose HNSW scans continue past filtered-out rows (`hnsw.iterative_scan`). */
const ITERATIVE_SCAN_SINCE = [0, 8, 0];

export async function probeVectorExtension(dataSource: DataSource): Promise<VectorExtensionProbe> {
  const [row] = (await dataSource.query(
    `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') AS available,
            current_setting('server_version_num')::int / 10000 AS major`,
  )) as { available: boolean; major: number }[];
  return { available: row!.available, serverMajor: row!.major };
}

/** The space vectors of these settings are stored under. */
export function vectorSpace(settings: EmbeddingsSettings): string {
  return settings.dimensions ? `${settings.model}@${settings.dimensions}` : settings.model;
}

/** Messages and summaries, by the `item_kind` of their vectors. */
const ITEM_TABLES = { message: 'memory_messages', summary: 'memory_summaries' } as const;
export type VectorItemKind = keyof typeof ITEM_TABLES;

/**
 * Candidates an HNSW scan keeps (`hnsw.ef_search`) for a vector leg that asks for `wanted` rows:
 * the leg's own count, and never fewer than the floor. See bench/README.md "Memory search" for the
 * recall each value buys at a million messages.
 */
export const HNSW_EF_SEARCH_FLOOR = 40;
export function hnswEfSearch(wanted: number): number {
  return Math.max(HNSW_EF_SEARCH_FLOOR, wanted);
}

/** The HNSW index of one space and item kind (a partial expression index: the column has no fixed length). */
export function hnswIndexName(space: string, kind: VectorItemKind): string {
  return `memory_embeddings_hnsw_${kind}_${createHash('sha256').update(space).digest('hex').slice(0, 12)}`;
}

/**
 * The predicate and the indexed expression an HNSW index of `store` holds, which a query must repeat
 * word for word for the planner to use it. The cast is what gives the index its fixed length.
 */
export function indexedVector(store: VectorStore, alias: string): { expression: string; predicate: (kind: VectorItemKind, model: string) => string } {
  const d = store.dimensions!;
  return {
    expression: `(${alias}embedding::vector(${d}))`,
    predicate: (kind, model) => `${alias}model = ${model} AND ${alias}item_kind = '${kind}' AND vector_dims(${alias}embedding) = ${d}`,
  };
}

const sqlString = (text: string) => `'${text.replace(/'/g, "''")}'`;

function atLeast(version: string, min: number[]): boolean {
  const parts = version.split('.').map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < min.length; i++) if ((parts[i] ?? 0) !== min[i]) return (parts[i] ?? 0) > min[i]!;
  return true;
}

/**
 * Creates the vector store, idempotently and under an advisory lock (replicas boot together).
 * pgvector is an optional server package, so this is not a migration (a migration runs once; the
 * package may be installed later): the extension, the table and, with a configured length and
 * pgvector 0.8+, an HNSW index per item kind are created at boot. The first boot in HYBRID mode over
 * a store that already holds vectors builds the index over all of them, which takes as long as they
 * take (minutes at a million): it runs on a connection without a statement timeout, and replicas
 * booting meanwhile wait on the lock. The build wants `maintenance_work_mem` to hold the whole graph
 * (about 1.3 KB per 256-dimension vector), or it spills to disk and slows down many times.
 * @throws when the extension cannot be created (not installed, no privilege) or the DDL fails
 */
export async function ensureVectorStore(dataSource: DataSource, settings: EmbeddingsSettings): Promise<VectorStore> {
  const space = vectorSpace(settings);
  return withMaintenanceConnection(dataSource, async (c) => {
    await c.query('BEGIN');
    try {
      await c.query("SELECT pg_advisory_xact_lock(hashtext('keelson-memory-vector-store'))");
      await c.query('CREATE EXTENSION IF NOT EXISTS vector');
      await c.query(EMBEDDINGS_TABLE_DDL);
      const { rows } = await c.query<{ extversion: string }>("SELECT extversion FROM pg_extension WHERE extname = 'vector'");
      const store: VectorStore = { space, dimensions: settings.dimensions ?? null, index: 'exact', version: rows[0]!.extversion };
      // Without iterative scans (before 0.8) an agent filter would starve an HNSW scan of rows: exact it is.
      if (settings.dimensions && atLeast(store.version, ITERATIVE_SCAN_SINCE)) {
        const { expression, predicate } = indexedVector(store, '');
        for (const kind of Object.keys(ITEM_TABLES) as VectorItemKind[]) {
          await c.query(
            `CREATE INDEX IF NOT EXISTS ${hnswIndexName(space, kind)} ON memory_embeddings
             USING hnsw (${expression} vector_cosine_ops) WHERE ${predicate(kind, sqlString(space))}`,
          );
        }
        store.index = 'hnsw';
      }
      await c.query('COMMIT');
      return store;
    } catch (err) {
      await c.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
  });
}

/** The vectors of messages and summaries, one per item and space (`model`). */
const EMBEDDINGS_TABLE_DDL = `CREATE TABLE IF NOT EXISTS memory_embeddings (
  item_kind text NOT NULL CHECK (item_kind IN ('message', 'summary')),
  item_id bigint NOT NULL,
  model text NOT NULL,
  embedding vector NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (item_kind, item_id, model)
)`;

/** Where one indexer run has got to: the last id looked at per item kind. */
export type EmbedCursor = Record<VectorItemKind, string>;

/** A cursor from the start: the first batch of a run looks through everything. */
export const embedCursorStart = (): EmbedCursor => ({ message: '0', summary: '0' });

/** Characters of an item that are embedded: its head, within any model's input limit. */
export const EMBED_CHARS = 8_000;

/**
 * Embeds up to `batch` messages and summaries that have no vector in the store's space, past
 * `cursor` (advanced in place), oldest first. Idempotent (replicas may race: the second insert is a
 * no-op); driven by VectorIndexer after commits.
 * @returns how many items were embedded; fewer than `batch` means none are left past the cursor
 */
export async function embedPending(dataSource: DataSource, client: EmbeddingsClient, store: VectorStore, cursor: EmbedCursor, batch = 64): Promise<number> {
  const pending: { kind: VectorItemKind; id: string; content: string }[] = [];
  await dataSource.transaction(async (m) => {
    // One merge anti-join per kind: both primary keys read in id order from the cursor on, stopping
    // at the batch. Without statistics on memory_embeddings (autovacuum off, or before a fresh
    // deployment's first autoanalyze) the planner would otherwise pick a nested loop that reads every
    // stored vector per candidate, or hash them all per batch.
    await m.query("SELECT set_config('enable_seqscan', 'off', true), set_config('enable_nestloop', 'off', true), set_config('enable_hashjoin', 'off', true)");
    for (const kind of Object.keys(ITEM_TABLES) as VectorItemKind[]) {
      if (pending.length >= batch) break;
      const rows = (await m.query(
        // Ordered by the bigint column (t.id), not the text it is read out as.
        `SELECT t.id::text AS id, left(t.content, ${EMBED_CHARS}) AS content FROM ${ITEM_TABLES[kind]} t
         WHERE t.id > $2 AND t.content <> '' AND NOT EXISTS (
           SELECT 1 FROM memory_embeddings e WHERE e.item_kind = '${kind}' AND e.item_id = t.id AND e.model = $1 AND e.item_id > $2)
         ORDER BY t.id LIMIT $3`,
        [store.space, cursor[kind], batch - pending.length],
      )) as { id: string; content: string }[];
      for (const r of rows) pending.push({ kind, ...r });
      if (rows.length) cursor[kind] = rows.at(-1)!.id;
    }
  });
  if (!pending.length) return 0;
  const vectors = await client.embed(pending.map((p) => p.content));
  await dataSource.query(
    `INSERT INTO memory_embeddings (item_kind, item_id, model, embedding)
     SELECT kind, id, $1, v::vector FROM unnest($2::text[], $3::int8[], $4::text[]) AS u(kind, id, v)
     ON CONFLICT DO NOTHING`,
    [store.space, pending.map((p) => p.kind), pending.map((p) => p.id), vectors.map(toVectorLiteral)],
  );
  return pending.length;
}
