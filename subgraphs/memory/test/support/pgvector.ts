import { startModelServer, type ModelServer } from '@keelson/model-server';
import { testServerHasPgvector } from '../../../../test/support/pgvector';
import type { EmbeddingsSettings } from '../../src/index';

/** The run declared pgvector absent (see test/support/pgvector.ts): hybrid specs check the lexical fallback. */
export const pgvectorDeclaredAbsent = process.env.KEELSON_TEST_PGVECTOR === 'absent';

/** Fails, naming the fix, unless the test server has pgvector exactly when this run expects it to. */
export async function expectPgvectorAsDeclared(): Promise<void> {
  const has = await testServerHasPgvector();
  if (!has && !pgvectorDeclaredAbsent) {
    throw new Error(
      'pgvector is not installed on the test Postgres (pg_available_extensions has no `vector`), so hybrid search cannot be tested: ' +
        'install it with scripts/install-pgvector.sh (.ci/run does), or set KEELSON_TEST_PGVECTOR=absent to test the lexical fallback in its place',
    );
  }
  if (has && pgvectorDeclaredAbsent) {
    throw new Error('KEELSON_TEST_PGVECTOR=absent, but the test Postgres has pgvector: unset it, so hybrid search is tested');
  }
}

/**
 * `it` for a spec of hybrid search. Where `KEELSON_TEST_PGVECTOR=absent`, `fallback` runs in its
 * place, under the same name marked as such.
 */
export function itHybrid(name: string, spec: () => Promise<void>, fallback: () => Promise<void>, timeout?: number): void {
  if (pgvectorDeclaredAbsent) it(`${name} [pgvector absent: checks the lexical fallback in its place]`, fallback, timeout);
  else it(name, spec, timeout);
}

/** The length tests ask the model server for: indexed (HNSW), and few hash collisions between words. */
export const TEST_DIMENSIONS = 256;
export const TEST_EMBEDDING_MODEL = 'keelson-embedding';

/**
 * A vector neighbour's least similarity in tests. The model server hashes word stems into 256
 * signed dimensions, so unrelated texts collide now and then: in the 10k corpus, one message of
 * 200 scores 0.32 against "xylophone marmalade", with no word in common. A two-word query and a
 * ten-stem message sharing both words score 0.45. An approximate (HNSW) scan finds a 0.32 collision
 * on some builds and not on others, so the floor sits clear above it.
 */
export const TEST_MIN_SIMILARITY = 0.4;

/** The local model server as the embeddings endpoint: deterministic hashed bags of word stems. */
export async function startEmbeddings(overrides: Partial<EmbeddingsSettings> = {}): Promise<{ models: ModelServer; settings: EmbeddingsSettings }> {
  const models = await startModelServer();
  return {
    models,
    settings: { url: models.openaiBaseUrl, model: TEST_EMBEDDING_MODEL, timeoutMs: 5_000, dimensions: TEST_DIMENSIONS, minSimilarity: TEST_MIN_SIMILARITY, ...overrides },
  };
}

export { testServerHasPgvector };
