import { parseEnv } from '@keelson/schema';
import { loadMemoryConfig, memorySettings } from './config';

describe('memory settings from the environment', () => {
  it('configures embeddings only when both the URL and the model are set, saying what is missing otherwise', () => {
    expect(memorySettings(parseEnv({}))).toEqual({ embeddingsMissing: 'no embeddings endpoint is configured (KEELSON_EMBEDDINGS_URL)' });
    expect(memorySettings(parseEnv({ KEELSON_EMBEDDINGS_URL: 'http://127.0.0.1:8080/v1' }))).toEqual({
      embeddingsMissing: 'KEELSON_EMBEDDINGS_URL is set but KEELSON_EMBEDDINGS_MODEL is not',
    });
    expect(
      memorySettings(parseEnv({ KEELSON_EMBEDDINGS_URL: 'http://127.0.0.1:8080/v1', KEELSON_EMBEDDINGS_MODEL: 'nomic', KEELSON_EMBEDDINGS_API_KEY: 'k' })),
    ).toEqual({ embeddings: { url: 'http://127.0.0.1:8080/v1', model: 'nomic', apiKey: 'k', timeoutMs: 10_000, minSimilarity: 0 } });
    expect(
      memorySettings(parseEnv({ KEELSON_EMBEDDINGS_URL: 'http://127.0.0.1:8080/v1', KEELSON_EMBEDDINGS_MODEL: 'nomic', KEELSON_EMBEDDINGS_DIMENSIONS: '256' })),
    ).toEqual({ embeddings: { url: 'http://127.0.0.1:8080/v1', model: 'nomic', timeoutMs: 10_000, minSimilarity: 0, dimensions: 256 } });
  });

  it("rejects a dimension pgvector's index cannot hold, naming the variable", () => {
    expect(() => parseEnv({ KEELSON_EMBEDDINGS_DIMENSIONS: '3072' })).toThrow(/KEELSON_EMBEDDINGS_DIMENSIONS.*2000/);
  });

  it('reads transcripts from the sessions subgraph and prompt-node turns from the runs subgraph, on their local ports by default', () => {
    expect(loadMemoryConfig({})).toMatchObject({ sessionsUrl: 'http://127.0.0.1:4004/graphql', runsUrl: 'http://127.0.0.1:4003/graphql' });
    expect(loadMemoryConfig({ KEELSON_SESSIONS_PORT: '5004', KEELSON_RUNS_URL: 'http://runs:4003/graphql' })).toMatchObject({
      sessionsUrl: 'http://127.0.0.1:5004/graphql',
      runsUrl: 'http://runs:4003/graphql',
    });
  });
});
