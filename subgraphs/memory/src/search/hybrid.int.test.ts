import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDataSource, type MeshDataSource } from '@keelson/kit';
import { silentLogger } from '@keelson/service';
import { startMemoryHarness, type MemoryHarness } from '../../test/support/memoryHarness';
import { memoryEntities } from '../index';
import type { EmbeddingsSettings } from '../settings';
import { EmbeddingsClient } from './embeddings';
import { SearchService } from './search.service';
import { VectorIndexer } from './vectorIndexer';
import { EMBEDDINGS_TABLE_DDL, type SearchModeInfo } from './vectorStore';

jest.setTimeout(60_000);

/**
 * pgvector is not installed on the test server, so this file stands one in, in SQL: a `vector`
 * domain over its text form and a `<=>` cosine-distance operator. Everything else is the real code
 * path of HYBRID mode: the embeddings client against an OpenAI-compatible server, embedPending and
 * the indexer writing vectors, and the search statement with its vector leg fused by rank.
 */
const PGVECTOR_STAND_IN = [
  'CREATE DOMAIN vector AS text',
  `CREATE FUNCTION stand_in_cosine_distance(a text, b text) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
     WITH x AS (SELECT string_to_array(trim(both '[]' from a), ',')::float8[] AS u, string_to_array(trim(both '[]' from b), ',')::float8[] AS v)
     SELECT 1 - (SELECT sum(u[i] * v[i]) FROM x, generate_subscripts(x.u, 1) i)
              / NULLIF(sqrt((SELECT sum(e * e) FROM x, unnest(x.u) e)) * sqrt((SELECT sum(e * e) FROM x, unnest(x.v) e)), 0)
     FROM x
   $$`,
  'CREATE OPERATOR <=> (LEFTARG = text, RIGHTARG = text, FUNCTION = stand_in_cosine_distance)',
  EMBEDDINGS_TABLE_DDL,
];

/** A toy embedding model that knows synonyms: words of one concept land on the same axis. */
const CONCEPTS = [
  ['stampede', 'stampedes', 'thundering', 'herd', 'dogpile'],
  ['ttl', 'expiry', 'expires', 'expire', 'lapses'],
  ['cache', 'caches', 'memo'],
  ['deploy', 'rollout', 'release'],
];
function embed(text: string): number[] {
  const v = CONCEPTS.map(() => 0.01);
  for (const word of text.toLowerCase().split(/[^a-z]+/)) CONCEPTS.forEach((c, i) => c.includes(word) && (v[i]! += 1));
  return v;
}

let h: MemoryHarness;
let ds: MeshDataSource;
let server: Server;
let settings: EmbeddingsSettings;
let requests = 0;

beforeAll(async () => {
  h = await startMemoryHarness();
  for (const ddl of PGVECTOR_STAND_IN) await h.sql(ddl);
  server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    requests += 1;
    const { input } = JSON.parse(body) as { input: string[] };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: input.map((t, index) => ({ index, embedding: embed(t) })) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  settings = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, model: 'toy-synonyms', timeoutMs: 5_000 };
  ds = createDataSource({ url: h.db.url, entities: memoryEntities, migrations: [], migrationsTableName: 'memory_migrations', log: silentLogger(), poolSize: 2 });
  await ds.dataSource.initialize();
});
afterAll(async () => {
  await ds?.dataSource.destroy();
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r));
  await h?.close();
});

describe('HYBRID search (pgvector stood in for)', () => {
  it('embeds what was stored and finds by meaning what shares no word with the query, fused with lexical hits', async () => {
    const [planted] = await h.running.services.memory.appendMany([
      { sessionId: 'codex:hybrid', agent: 'agent-h', role: 'assistant', content: 'The marmot layer stampedes whenever the TTL runs out.' },
      { sessionId: 'codex:hybrid', agent: 'agent-h', role: 'user', content: 'Ship the parser release on Friday.' },
      { sessionId: 'codex:hybrid', agent: 'agent-other', role: 'user', content: 'Our memo layer has a thundering herd at expiry too.' },
    ]);
    const indexer = new VectorIndexer(ds.dataSource, new EmbeddingsClient(settings), silentLogger());
    indexer.kick();
    await indexer.idle();
    const [stored] = await h.sql<{ n: string }>("SELECT count(*) AS n FROM memory_embeddings WHERE model = 'toy-synonyms'");
    expect(stored!.n).toBe('3');

    const mode: SearchModeInfo = { mode: 'HYBRID', vectorExtensionAvailable: true, embeddingsConfigured: true, embeddingModel: settings.model, reason: 'test' };
    const search = new SearchService({ dataSource: ds.dataSource, events: h.running.services.events, settings: { embeddings: settings }, log: silentLogger() }, mode);
    const hits = await search.search({ query: 'thundering herd at expiry', agent: 'agent-h' });
    expect(hits[0]).toMatchObject({ id: planted!.id, matchedBy: ['VECTOR'] });
    expect(hits.every((hit) => hit.agent === 'agent-h')).toBe(true);

    // Without the agent filter the other agent's message matches lexically and by meaning: both legs.
    const both = await search.search({ query: 'thundering herd at expiry' });
    expect(both[0]!.content).toMatch(/^Our memo layer/);
    expect(both[0]!.matchedBy.sort()).toEqual(['FULL_TEXT', 'VECTOR']);
  });

  it('stays lexical for a search whose query cannot be embedded', async () => {
    const before = requests;
    const mode: SearchModeInfo = { mode: 'HYBRID', vectorExtensionAvailable: true, embeddingsConfigured: true, embeddingModel: 'm', reason: 'test' };
    const down = { ...settings, url: 'http://127.0.0.1:9/v1', timeoutMs: 500 };
    const search = new SearchService({ dataSource: ds.dataSource, events: h.running.services.events, settings: { embeddings: down }, log: silentLogger() }, mode);
    const hits = await search.search({ query: 'parser release' });
    expect(hits[0]!.matchedBy).toEqual(['FULL_TEXT']);
    expect(requests).toBe(before);
  });
});
