import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ModelServer } from '@keelson/model-server';
import { createDataSource } from '@keelson/platform';
import { silentLogger } from '@keelson/service';
import { security } from '../../../../test/support/auth';
import { startMemorySubgraph } from '../index';
import { corpus } from '../../test/support/corpus';
import { expectData, startMemoryHarness, type MemoryHarness } from '../../test/support/memoryHarness';
import { expectPgvectorAsDeclared, itHybrid, startEmbeddings, TEST_DIMENSIONS, TEST_EMBEDDING_MODEL } from '../../test/support/pgvector';
import type { EmbeddingsSettings } from '../settings';

jest.setTimeout(60_000);

/**
 * HYBRID search on the real pgvector: the embeddings client against an OpenAI-compatible server, the
 * indexer writing vectors, the vector leg fused with the lexical ones by rank, the mode reported as
 * it is. Where the run declares pgvector absent (KEELSON_TEST_PGVECTOR=absent), each spec checks the
 * lexical fallback in its place.
 */

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

/** The toy model behind /v1/embeddings; `down` makes it answer 503 until set back. */
interface ToyServer {
  settings: EmbeddingsSettings;
  requests: number;
  down: boolean;
  server: Server;
}
async function toyEmbeddings(timeoutMs = 5_000): Promise<ToyServer> {
  const toy = { requests: 0, down: false } as ToyServer;
  toy.server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    toy.requests += 1;
    if (toy.down) {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded"}}');
      return;
    }
    const { input } = JSON.parse(body) as { input: string[] };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: input.map((t, index) => ({ object: 'embedding', index, embedding: embed(t) })) }));
  });
  await new Promise<void>((resolve) => toy.server.listen(0, '127.0.0.1', resolve));
  toy.settings = { url: `http://127.0.0.1:${(toy.server.address() as AddressInfo).port}/v1`, model: 'toy-synonyms', timeoutMs };
  return toy;
}
async function closeToy(toy: ToyServer | undefined): Promise<void> {
  if (!toy) return;
  toy.server.closeAllConnections();
  await new Promise((r) => toy.server.close(r));
}

const PLANTED = [
  { sessionId: 'codex:hybrid', agent: 'agent-h', role: 'assistant', content: 'The marmot layer stampedes whenever the TTL runs out.' },
  { sessionId: 'codex:hybrid', agent: 'agent-h', role: 'user', content: 'Ship the parser release on Friday.' },
  { sessionId: 'codex:hybrid', agent: 'agent-other', role: 'user', content: 'Our memo layer has a thundering herd at expiry too.' },
] as const;

/** The indexes a plan (EXPLAIN FORMAT JSON) scans. */
function indexScans(plan: unknown): string[] {
  const found: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const named = (node as Record<string, unknown>)['Index Name'];
      if (typeof named === 'string') found.push(named);
      Object.values(node).forEach(walk);
    }
  };
  walk(plan);
  return found;
}

const MODE = '{ memorySearchMode { mode vectorExtensionAvailable embeddingsConfigured embeddingModel reason } }';
type Mode = { mode: string; vectorExtensionAvailable: boolean; embeddingsConfigured: boolean; embeddingModel: string | null; reason: string };

describe('HYBRID search on pgvector', () => {
  let h: MemoryHarness | undefined;
  let toy: ToyServer | undefined;
  let models: ModelServer | undefined;
  beforeAll(() => expectPgvectorAsDeclared());
  afterEach(async () => {
    await h?.close();
    await closeToy(toy);
    await models?.stop();
    h = toy = models = undefined;
  });
  const mode = async () => expectData(await h!.gql<{ memorySearchMode: Mode }>(MODE)).memorySearchMode;

  itHybrid(
    'embeds what was stored and finds by meaning what shares no word with the query, fused with lexical hits',
    async () => {
      toy = await toyEmbeddings();
      h = await startMemoryHarness({ settings: { embeddings: toy.settings } });
      const [planted] = await h.running.services.memory.appendMany([...PLANTED]);
      await h.running.services.indexer!.idle();
      const [stored] = await h.sql<{ n: string }>("SELECT count(*) AS n FROM memory_embeddings WHERE model = 'toy-synonyms'");
      expect(stored!.n).toBe('3');

      const search = h.running.services.search;
      const hits = await search.search({ query: 'thundering herd at expiry', agent: 'agent-h' });
      expect(hits[0]).toMatchObject({ id: planted!.id, matchedBy: ['VECTOR'] });
      expect(hits.every((hit) => hit.agent === 'agent-h')).toBe(true);
      // Without the agent filter the other agent's message matches lexically and by meaning: both legs, first.
      const both = await search.search({ query: 'thundering herd at expiry' });
      expect(both[0]!.content).toMatch(/^Our memo layer/);
      expect([...both[0]!.matchedBy].sort()).toEqual(['FULL_TEXT', 'VECTOR']);
      // No configured length: the model's own, searched exactly.
      expect(await mode()).toEqual({
        mode: 'HYBRID',
        vectorExtensionAvailable: true,
        embeddingsConfigured: true,
        embeddingModel: 'toy-synonyms',
        reason: expect.stringMatching(/^hybrid: full text \+ trigram \+ pgvector \d+\.\d+\.\d+ \(toy-synonyms, exact search: set KEELSON_EMBEDDINGS_DIMENSIONS/),
      });
    },
    async () => {
      toy = await toyEmbeddings();
      h = await startMemoryHarness({ settings: { embeddings: toy.settings } });
      await h.running.services.memory.appendMany([...PLANTED]);
      expect(h.running.services.indexer).toBeUndefined();
      const hits = await h.running.services.search.search({ query: 'thundering herd at expiry', agent: 'agent-h' });
      expect(hits).toEqual([]);
      expect(await mode()).toMatchObject({ mode: 'LEXICAL', vectorExtensionAvailable: false, reason: expect.stringMatching(/^lexical: pgvector is not installed .*postgresql-15-pgvector/) });
      expect(toy.requests).toBe(0);
    },
  );

  itHybrid(
    'with a configured length, keeps an HNSW index per item kind and searches through it',
    async () => {
      const embeddings = await startEmbeddings();
      models = embeddings.models;
      h = await startMemoryHarness({ settings: { embeddings: embeddings.settings } });
      // Varied texts, as real ones are: an approximate index finds neighbours through neighbours,
      // and near-duplicates crowd out the links to a text unlike them.
      const entries = corpus({ conversations: 4, messagesPerConversation: 50, seed: 7 });
      entries[120]!.content = 'Quokkas reconcile billing snapshots while the ledger epoch drifted.';
      const agent = entries[120]!.agent;
      await h.running.services.memory.appendMany(entries);
      await h.running.services.indexer!.idle();
      const indexes = await h.sql<{ indexname: string; indexdef: string }>("SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'memory_embeddings_hnsw_%' ORDER BY indexname");
      expect(indexes.map((i) => i.indexname)).toEqual([expect.stringMatching(/^memory_embeddings_hnsw_message_/), expect.stringMatching(/^memory_embeddings_hnsw_summary_/)]);
      expect(indexes[0]!.indexdef).toMatch(new RegExp(`USING hnsw \\(\\(\\(embedding\\)::vector\\(${TEST_DIMENSIONS}\\)\\) vector_cosine_ops\\)`));
      const [vectors] = await h.sql<{ n: string; dims: number }>('SELECT count(*) AS n, max(vector_dims(embedding)) AS dims FROM memory_embeddings');
      expect(vectors).toEqual({ n: '200', dims: TEST_DIMENSIONS });

      // Nearest first, within the agent.
      const args = { query: 'quokka billing', agent, limit: 3 };
      const hits = await h.running.services.search.search(args);
      expect(hits[0]).toMatchObject({ content: 'Quokkas reconcile billing snapshots while the ledger epoch drifted.', matchedBy: ['FULL_TEXT', 'VECTOR'] });
      expect(hits.every((hit) => hit.agent === agent)).toBe(true);
      // The vector leg read the message index.
      expect(indexScans(await h.running.services.search.explain(args))).toContain(indexes[0]!.indexname);
      expect((await mode()).reason).toMatch(new RegExp(`\\(keelson-embedding, ${TEST_DIMENSIONS} dimensions, HNSW index\\)`));
    },
    async () => {
      const embeddings = await startEmbeddings();
      models = embeddings.models;
      h = await startMemoryHarness({ settings: { embeddings: embeddings.settings } });
      const indexes = await h.sql<{ n: string }>("SELECT count(*) AS n FROM pg_class WHERE relname LIKE 'memory_embeddings%'");
      expect(indexes[0]!.n).toBe('0');
      expect((await mode()).mode).toBe('LEXICAL');
    },
  );

  itHybrid(
    'builds the HNSW index at boot over every stored vector, however long that outlasts the statement timeout',
    async () => {
      const embeddings = await startEmbeddings();
      models = embeddings.models;
      h = await startMemoryHarness({ settings: { embeddings: embeddings.settings } });
      // A store with vectors and no index yet, as one that goes HYBRID for the first time (or one
      // whose index an operator dropped): 10,000 random vectors of the configured space.
      const [index] = await h.sql<{ indexname: string; indexdef: string }>("SELECT indexname, indexdef FROM pg_indexes WHERE indexname LIKE 'memory_embeddings_hnsw_message_%'");
      await h.sql(`DROP INDEX ${index!.indexname}`);
      await h.sql(
        `INSERT INTO memory_embeddings (item_kind, item_id, model, embedding)
         SELECT 'message', g, $1, (SELECT array_agg(random()::real) FROM generate_series(1, ${TEST_DIMENSIONS}) WHERE g > 0)::vector
         FROM generate_series(1, 10000) g`,
        [`${TEST_EMBEDDING_MODEL}@${TEST_DIMENSIONS}`],
      );
      const timeouts = { ...security.pg, statementTimeoutMs: 300 };
      // The build outlasts that bound: on a pooled connection under it, the statement is cancelled.
      const bounded = createDataSource({ url: h.db.url, entities: [], migrations: [], migrationsTableName: 'test_bounded_migrations', log: silentLogger(), poolSize: 1, pg: timeouts });
      await bounded.dataSource.initialize();
      try {
        await expect(bounded.dataSource.query(index!.indexdef)).rejects.toMatchObject({ driverError: expect.objectContaining({ code: '57014' }) });
      } finally {
        await bounded.dataSource.destroy();
      }
      // An instance whose statements are bounded by it still builds the index at boot, and is HYBRID.
      const replica = await startMemorySubgraph({
        databaseUrl: h.db.url,
        host: '127.0.0.1',
        port: 0,
        security: { ...security, pg: timeouts },
        settings: { embeddings: embeddings.settings },
        log: silentLogger(),
      });
      try {
        expect(replica.services.mode).toMatchObject({ mode: 'HYBRID', reason: expect.stringMatching(/HNSW index\)/) });
        expect(await h.sql("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'memory_embeddings_hnsw_message_%'")).toEqual([{ indexname: index!.indexname }]);
      } finally {
        await replica.stop();
      }
    },
    async () => {
      const embeddings = await startEmbeddings();
      models = embeddings.models;
      h = await startMemoryHarness({ settings: { embeddings: embeddings.settings } });
      expect(await h.sql("SELECT relname FROM pg_class WHERE relname LIKE 'memory_embeddings%'")).toEqual([]);
      expect((await mode()).mode).toBe('LEXICAL');
    },
  );

  itHybrid(
    'goes lexical, and says so, while the embeddings endpoint fails, and catches up when it answers again',
    async () => {
      // The retry interval is the endpoint's timeout: 1.5 s, so a loaded machine still searches twice
      // inside it (300 ms was once too short in CI), and the recovery waits just past it.
      toy = await toyEmbeddings(1500);
      h = await startMemoryHarness({ settings: { embeddings: toy.settings } });
      await h.running.services.memory.appendMany([PLANTED[0]]);
      await h.running.services.indexer!.idle();

      toy.down = true;
      // Appended during the outage: the indexer fails, and says so.
      await h.running.services.memory.appendMany([PLANTED[2]]);
      await h.running.services.indexer!.idle();
      expect((await mode()).reason).toMatch(/; embedding new items failed at .*answered 503/);
      // The query cannot be embedded: lexical hits only, and the mode says why.
      const lexical = await h.running.services.search.search({ query: 'thundering herd at expiry' });
      expect(lexical.map((hit) => hit.matchedBy)).toEqual([['FULL_TEXT']]);
      const down = await mode();
      expect(down).toMatchObject({ mode: 'LEXICAL', reason: expect.stringMatching(/^lexical for now: hybrid is configured but the embeddings endpoint failed at .*answered 503/) });
      // Within the retry interval searches leave the endpoint alone.
      const asked = toy.requests;
      await h.running.services.search.search({ query: 'stampede' });
      expect(toy.requests).toBe(asked);

      toy.down = false;
      await new Promise((r) => setTimeout(r, 1600));
      const back = await h.running.services.search.search({ query: 'dogpile' });
      expect(back.map((hit) => hit.content)).toContain(PLANTED[0].content);
      expect((await mode()).mode).toBe('HYBRID');
      // Recovery kicked the indexer: what was appended during the outage has its vector now.
      await h.running.services.indexer!.idle();
      const [stored] = await h.sql<{ n: string }>('SELECT count(*) AS n FROM memory_embeddings');
      expect(stored!.n).toBe('2');
      expect((await mode()).reason).not.toMatch(/failed/);
    },
    async () => {
      toy = await toyEmbeddings(300);
      toy.down = true;
      h = await startMemoryHarness({ settings: { embeddings: toy.settings } });
      await h.running.services.memory.appendMany([PLANTED[2]]);
      expect((await h.running.services.search.search({ query: 'thundering herd at expiry' })).map((hit) => hit.matchedBy)).toEqual([['FULL_TEXT']]);
      expect(toy.requests).toBe(0);
    },
  );
});
