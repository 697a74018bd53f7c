// `node -r ./scripts/register.js bench/memory.ts`: memorySearch latency (p50 / p99) at 10,000, 100,000
// and 1,000,000 messages, LEXICAL and HYBRID (pgvector HNSW) side by side from one run, and the recall
// of the HNSW index against exact search. Boots the memory subgraph alone, in-process, twice over one
// throwaway database (one instance per mode); messages are appended through the lexical instance, their
// vectors written straight into the store (COPY) and indexed by the hybrid instance's boot. Progress
// goes to stderr, the report to stdout. See bench/README.md.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { embed as modelServerEmbed } from '@keelson/model-server';
import { silentLogger, serviceIdentity, testSecurity } from '@keelson/service';
import {
  EMBED_CHARS,
  EmbeddingsClient,
  hnswEfSearch,
  hnswIndexName,
  indexedVector,
  startMemorySubgraph,
  toVectorLiteral,
  vectorSpace,
  type EmbeddingsSettings,
  type MemoryEntry,
  type RunningMemory,
  type VectorStore,
} from '@keelson/subgraph-memory';
import { Client } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { corpus, corpusConversation } from '@keelson/subgraph-memory/test/support/corpus';
import { startEmbeddings } from '@keelson/subgraph-memory/test/support/pgvector';
import { createTestDatabase } from '../test/support/db';
import { runBench, stderrProgress, type Teardown } from './benchStack';
import { fixed, percentile, table, times } from './report';

const PER_CONVERSATION = 200;
const SEED_BATCH = 10_000;
const DEFAULT_SIZES = [10_000, 100_000, 1_000_000];

/** The store sizes measured: `KEELSON_BENCH_MEMORY_SIZES=10000,100000` for a quicker look. */
function benchSizes(raw: string | undefined): number[] {
  if (raw === undefined || raw.trim() === '') return DEFAULT_SIZES;
  const sizes = raw.split(',').map((part) => Number(part.trim()));
  const valid = sizes.every((n, i) => Number.isSafeInteger(n) && n >= SEED_BATCH && n % SEED_BATCH === 0 && (i === 0 || n > sizes[i - 1]!));
  if (!valid) throw new Error(`KEELSON_BENCH_MEMORY_SIZES must list ascending multiples of ${SEED_BATCH.toLocaleString('en')}, comma-separated (got "${raw}")`);
  return sizes;
}
const SIZES = benchSizes(process.env.KEELSON_BENCH_MEMORY_SIZES);
/** Rounds interleave the queries, so drift and noise fall on all of them alike. */
const ROUNDS = 8;
const REQUESTS_PER_ROUND = 25;
const WARMUP_REQUESTS = 20;

const PHRASE = 'the quokka ledger drifted after the zeppelin rollout';
const PLANT_CONVERSATION = 17;
const IDENT_CONVERSATION = 23;

const QUERIES = [
  { label: 'phrase', args: { query: 'quokka ledger drifted' }, note: 'full text, all terms' },
  { label: 'identifier', args: { query: 'QuokkaSnapshot' }, note: 'trigram: fragment of reconcileQuokkaSnapshots' },
  { label: 'path', args: { query: 'billing/quokkaRecon' }, note: 'trigram: fragment of src/billing/quokkaReconciler.ts' },
  { label: 'turn', args: { query: 'why is the scheduler flaky after the cache change?' }, note: 'natural language: any term, ranked' },
  { label: 'agent', args: { query: 'flaky router', agent: corpusConversation(PLANT_CONVERSATION).agent }, note: 'full text, one agent' },
] as const;

const SEARCH = `query ($query: String!, $agent: String, $limit: Int, $scope: MemoryScope) {
  memorySearch(query: $query, agent: $agent, limit: $limit, scope: $scope) { messageId kind snippet score matchedBy conversation { agent } }
}`;

const MODES = ['lexical', 'hybrid'] as const;
type Mode = (typeof MODES)[number];
/** While embedding, statistics of memory_embeddings are refreshed this often (see embed()). */
const ANALYZE_EVERY_MS = 5_000;

/** Messages per COPY chunk when vectors are written straight into the store. */
const VECTOR_CHUNK = 20_000;
/**
 * What the HNSW build may use: the whole graph of a million 256-dimension vectors (about 1.3 GB) in
 * memory, and the server's parallel maintenance workers. With the server default (64 MB) the build
 * spills to disk after some 50,000 vectors and goes many times slower. Set on the bench database only.
 */
const BUILD_MAINTENANCE_WORK_MEM = '3GB';
/** Query vectors for recall: held-out messages of the same generator, embedded as a search embeds. */
const RECALL_QUERIES = 100;
/** Recall with an agent filter: fewer, as its exact answers join every message. */
const RECALL_FILTERED_QUERIES = 50;
/** `hnsw.ef_search` values tried for recall (the search's own is added). */
const EF_SEARCH_SWEEP = [20, 40, 100, 200, 400];
/** Messages appended at the end to time the indexer into the largest index. */
const INDEXER_TAIL = 2_000;

const progress = stderrProgress('bench');

type Hit = { messageId: string; matchedBy: string[]; conversation: { agent: string } };

/** Both memory instances run under one security; the bench asks them as a mesh service would. */
const security = testSecurity();
const asService = serviceIdentity(security.assertions, 'bench');

async function search(url: string, args: Record<string, unknown>): Promise<Hit[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(await asService.headers()) },
    body: JSON.stringify({ query: SEARCH, variables: { limit: 10, ...args } }),
  });
  const body = (await res.json()) as { data?: { memorySearch: Hit[] }; errors?: unknown[] };
  if (res.status !== 200 || body.errors || !body.data) throw new Error(`memorySearch answered ${res.status}: ${JSON.stringify(body.errors ?? body)}`);
  return body.data.memorySearch;
}

/** The corpus slice for conversations [from, to), with the planted messages in the first slice. */
function slice(from: number, to: number): MemoryEntry[] {
  const entries = corpus({ conversations: to - from, messagesPerConversation: PER_CONVERSATION, seed: 42 + from, firstConversation: from });
  if (from <= IDENT_CONVERSATION) {
    entries[(PLANT_CONVERSATION - from) * PER_CONVERSATION + 100]!.content = `Root cause found: ${PHRASE}, so I pinned the ledger epoch.`;
    entries[(IDENT_CONVERSATION - from) * PER_CONVERSATION + 61]!.content =
      'Renamed reconcileQuokkaSnapshots in src/billing/quokkaReconciler.ts and moved its callers to the batch API.';
  }
  return entries;
}

/** Appends conversations until the store holds `total` messages; returns messages per second. */
async function grow(memory: RunningMemory, fromMessages: number, total: number): Promise<number> {
  const t0 = performance.now();
  for (let m = fromMessages; m < total; m += SEED_BATCH) {
    const from = m / PER_CONVERSATION;
    const to = Math.min(total, m + SEED_BATCH) / PER_CONVERSATION;
    await memory.services.memory.appendMany(slice(from, to));
    const held = Math.min(total, m + SEED_BATCH);
    if (held % 50_000 === 0 || held === total) {
      progress(`  ${held.toLocaleString('en')} messages (${fixed(((held - fromMessages) / (performance.now() - t0)) * 1000, 0)}/s)`);
    }
  }
  return ((total - fromMessages) / (performance.now() - t0)) * 1000;
}

/** Checks every query answers, and the planted items come first, before anything is timed; returns each query's hits. */
async function check(url: string, plantedIds: { phrase: string; ident: string }): Promise<Map<string, Hit[]>> {
  const hits = new Map<string, Hit[]>();
  for (const q of QUERIES) hits.set(q.label, await search(url, q.args));
  const first = (label: string) => hits.get(label)![0]?.messageId;
  if (first('phrase') !== plantedIds.phrase) throw new Error(`${url}: the planted phrase is not the first hit`);
  if (first('identifier') !== plantedIds.ident) throw new Error(`${url}: the planted identifier is not the first hit`);
  if (first('path') !== plantedIds.ident) throw new Error(`${url}: the planted path is not the first hit`);
  const agentHits = hits.get('agent')!;
  if (!agentHits.length || agentHits.some((h) => h.conversation.agent !== QUERIES[4].args.agent)) throw new Error(`${url}: the agent filter leaked`);
  return hits;
}

type Samples = Map<string, number[]>;
const sampleKey = (mode: Mode, label: string) => `${mode} ${label}`;

/**
 * Every query in every mode given a URL: warm-up, then rounds in which each query takes its turn in
 * each mode, the query order reversing and the mode that goes first alternating from round to round.
 */
async function measure(urls: Partial<Record<Mode, string>>): Promise<Samples> {
  const modes = MODES.filter((m) => urls[m]);
  const samples: Samples = new Map(modes.flatMap((m) => QUERIES.map((q) => [sampleKey(m, q.label), [] as number[]])));
  for (const m of modes) for (const q of QUERIES) for (let i = 0; i < WARMUP_REQUESTS; i++) await search(urls[m]!, q.args);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? QUERIES : [...QUERIES].reverse();
    const modeOrder = round % 2 === 0 ? modes : [...modes].reverse();
    for (const q of order) {
      for (const m of modeOrder) {
        const into = samples.get(sampleKey(m, q.label))!;
        for (let i = 0; i < REQUESTS_PER_ROUND; i++) {
          const t0 = performance.now();
          await search(urls[m]!, q.args);
          into.push(performance.now() - t0);
        }
      }
    }
  }
  return samples;
}

/** One Postgres session on the bench database. */
async function sql<T>(url: string, run: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await run(c);
  } finally {
    await c.end();
  }
}

/** What an embedding pass cost. */
interface Embedded {
  items: number;
  seconds: number;
}

/**
 * Has the HYBRID instance's own VectorIndexer (64 items per request) embed every message without a
 * vector, and times it until `idle()`. The server's autovacuum may be off (it is on the reference
 * box) or a minute away: without statistics on memory_embeddings, the indexer's pending-items query
 * plans a nested loop over every stored vector per batch and the pass goes quadratic, so this
 * stands in for autovacuum and runs ANALYZE every few seconds, as it would in a steady state.
 */
async function embed(dbUrl: string, memory: RunningMemory, total: number): Promise<Embedded> {
  const indexer = memory.services.indexer!;
  const c = new Client({ connectionString: dbUrl });
  await c.connect();
  const count = async () => Number((await c.query<{ n: string }>('SELECT count(*) AS n FROM memory_embeddings')).rows[0]!.n);
  const before = await count();
  const t0 = performance.now();
  let busy = Promise.resolve();
  const timer = setInterval(() => {
    busy = busy.then(async () => {
      await c.query('ANALYZE memory_embeddings');
      const n = await count();
      progress(`  ${n.toLocaleString('en')} of ${total.toLocaleString('en')} vectors (${fixed((n - before) / ((performance.now() - t0) / 1000), 0)} items/s)`);
    });
  }, ANALYZE_EVERY_MS);
  try {
    indexer.kick();
    await indexer.idle();
    const seconds = (performance.now() - t0) / 1000;
    clearInterval(timer);
    await busy;
    const after = await count();
    if (after !== total) throw new Error(`${after} of ${total} messages have a vector after the indexer went idle (${memory.services.mode.reason})`);
    return { items: after - before, seconds };
  } finally {
    clearInterval(timer);
    await busy.catch(() => undefined);
    await c.end();
  }
}

/** The Postgres plan nodes a search's EXPLAIN ANALYZE ran on memory_embeddings: `<node> <index> (<rows> rows)`. */
function vectorScans(plan: unknown): { hnsw: boolean; nodes: string[] } {
  const nodes: string[] = [];
  let hnsw = false;
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const n = node as Record<string, unknown>;
      const index = typeof n['Index Name'] === 'string' ? n['Index Name'] : undefined;
      if (n['Relation Name'] === 'memory_embeddings' || index?.startsWith('memory_embeddings')) {
        if (index?.startsWith('memory_embeddings_hnsw_message_')) hnsw = true;
        nodes.push(`${String(n['Node Type'])}${index ? ` ${index}` : ''} (${Number(n['Actual Rows']) * Number(n['Actual Loops'] ?? 1)} rows)`);
      }
      Object.values(n).forEach(walk);
    }
  };
  walk(plan);
  return { hnsw, nodes };
}
/** COPY text format: a backslash, tab or line break in a field is escaped. */
const copyField = (text: string) => text.replace(/[\\\t\n\r]/g, (c) => ({ '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' })[c]!);

/**
 * Writes a vector for every message past `afterId` straight into memory_embeddings with COPY: the
 * vector the local model server would answer for the same text (its `embed`, called in-process),
 * under the hybrid instance's space, as its indexer would store it. Returns the last id written.
 */
async function writeVectors(dbUrl: string, store: VectorStore, afterId: string): Promise<{ items: number; seconds: number; lastId: string }> {
  const reader = new Client({ connectionString: dbUrl });
  const writer = new Client({ connectionString: dbUrl });
  await Promise.all([reader.connect(), writer.connect()]);
  const t0 = performance.now();
  let items = 0;
  let lastId = afterId;
  const model = copyField(store.space);
  async function* lines(): AsyncGenerator<string> {
    for (;;) {
      const { rows } = await reader.query<{ id: string; content: string }>(
        // Ordered by the bigint column (t.id), not the text it is read out as.
        `SELECT t.id::text AS id, left(t.content, ${EMBED_CHARS}) AS content FROM memory_messages t WHERE t.id > $1 AND t.content <> '' ORDER BY t.id LIMIT $2`,
        [lastId, VECTOR_CHUNK],
      );
      if (!rows.length) return;
      yield rows.map((r) => `message\t${r.id}\t${model}\t${toVectorLiteral(modelServerEmbed(r.content, store.dimensions!))}\n`).join('');
      const before = items;
      items += rows.length;
      lastId = rows.at(-1)!.id;
      if (Math.floor(items / 100_000) > Math.floor(before / 100_000)) {
        progress(`  ${items.toLocaleString('en')} vectors (${fixed(items / ((performance.now() - t0) / 1000), 0)}/s)`);
      }
    }
  }
  try {
    await pipeline(Readable.from(lines()), writer.query(copyFrom('COPY memory_embeddings (item_kind, item_id, model, embedding) FROM STDIN')));
    return { items, seconds: (performance.now() - t0) / 1000, lastId };
  } finally {
    await Promise.all([reader.end(), writer.end()]);
  }
}

/**
 * Starts the HYBRID instance. With its HNSW indexes dropped beforehand, its boot builds them over
 * every stored vector (ensureVectorStore), so the boot's time is the build's; the build's progress
 * (pg_stat_progress_create_index) is shown while it runs.
 */
async function bootHybrid(dbUrl: string, settings: EmbeddingsSettings): Promise<{ memory: RunningMemory; seconds: number }> {
  const watcher = new Client({ connectionString: dbUrl });
  await watcher.connect();
  let busy = Promise.resolve();
  const timer = setInterval(() => {
    busy = busy.then(async () => {
      const { rows } = await watcher.query<{ phase: string; done: string; total: string }>(
        'SELECT phase, tuples_done::text AS done, tuples_total::text AS total FROM pg_stat_progress_create_index WHERE datname = current_database()',
      );
      // pgvector counts the vectors it has put in the graph; it gives no total while loading.
      for (const r of rows) progress(`  HNSW build: ${r.phase}, ${Number(r.done).toLocaleString('en')} vectors${Number(r.total) ? ` of ${Number(r.total).toLocaleString('en')}` : ''}`);
    });
  }, 10_000);
  const t0 = performance.now();
  try {
    const memory = await startMemorySubgraph({ databaseUrl: dbUrl, host: '127.0.0.1', port: 0, security, settings: { embeddings: settings }, log: silentLogger() });
    return { memory, seconds: (performance.now() - t0) / 1000 };
  } finally {
    clearInterval(timer);
    await busy.catch(() => undefined);
    await watcher.end();
  }
}

/** One row of the recall sweep. */
interface RecallRow {
  efSearch: number;
  iterative: boolean;
  filtered: boolean;
  recall: number;
  /** Rows the index scan returned per query, on average (fewer than 10: the filter starved it). */
  returned: number;
  p50: number;
  p99: number;
}

/**
 * Recall@10 of the message HNSW index against exact search, over query vectors of held-out
 * messages. The index side runs the vector leg's own statement (its indexed expression and
 * predicate, the agent filter on the message row) at each `hnsw.ef_search`; the exact side
 * reads every vector of the space (the agent's message ids gathered once into a temporary table).
 * A hit counts when it is no farther than the exact tenth neighbour, so ties at the tenth distance
 * count whichever of them the index returned.
 */
async function measureRecall(dbUrl: string, store: VectorStore, agent: string): Promise<{ rows: RecallRow[]; exactMs: { all: number; filtered: number } }> {
  const texts = corpus({ conversations: 1, messagesPerConversation: RECALL_QUERIES, seed: 9_001, firstConversation: 99_000 }).map((e) => e.content);
  const vectors = texts.map((t) => toVectorLiteral(modelServerEmbed(t, store.dimensions!)));
  const { expression, predicate } = indexedVector(store, 'e.');
  const distance = `(${expression} <=> $1::vector(${store.dimensions}))`;
  const leg = `SELECT e.item_id::text AS id, ${distance} AS distance
    FROM memory_embeddings e JOIN memory_messages t ON t.id = e.item_id
    WHERE ${predicate('message', '$2')} AND ($3::text IS NULL OR t.agent = $3)
    ORDER BY distance LIMIT 10`;
  const exactAll = `SELECT e.item_id::text AS id, ${distance} AS distance FROM memory_embeddings e WHERE ${predicate('message', '$2')} ORDER BY distance LIMIT 10`;
  const exactFiltered = `SELECT e.item_id::text AS id, ${distance} AS distance FROM memory_embeddings e JOIN recall_agent_items a ON a.id = e.item_id
    WHERE ${predicate('message', '$2')} ORDER BY distance LIMIT 10`;
  return sql(dbUrl, async (c) => {
    type Found = { id: string; distance: number }[];
    const run = async (statement: string, params: unknown[], settings: Record<string, string>): Promise<{ found: Found; ms: number }> => {
      await c.query('BEGIN');
      try {
        for (const [name, value] of Object.entries(settings)) await c.query('SELECT set_config($1, $2, true)', [name, value]);
        const t0 = performance.now();
        const { rows } = await c.query<Found[number]>(statement, params);
        return { found: rows, ms: performance.now() - t0 };
      } finally {
        await c.query('COMMIT');
      }
    };
    await c.query(
      `CREATE TEMPORARY TABLE recall_agent_items AS SELECT t.id FROM memory_messages t WHERE t.agent = ${c.escapeLiteral(agent)}`,
    );
    await c.query('ANALYZE recall_agent_items');
    const exact: { all: Found[]; filtered: Found[] } = { all: [], filtered: [] };
    const exactMs = { all: 0, filtered: 0 };
    const scanEvery = { enable_indexscan: 'off', enable_bitmapscan: 'off' };
    for (const [i, v] of vectors.entries()) {
      const all = await run(exactAll, [v, store.space], scanEvery);
      exact.all.push(all.found);
      exactMs.all += all.ms;
      if (i < RECALL_FILTERED_QUERIES) {
        const filtered = await run(exactFiltered, [v, store.space], scanEvery);
        exact.filtered.push(filtered.found);
        exactMs.filtered += filtered.ms;
      }
      if ((i + 1) % 25 === 0) progress(`  exact neighbours of ${i + 1} of ${vectors.length} query vectors`);
    }
    const score = (found: Found, truth: Found) => {
      const bound = (truth.at(-1)?.distance ?? Infinity) + 1e-6;
      return truth.length ? Math.min(truth.length, found.filter((f) => f.distance <= bound).length) / truth.length : 1;
    };
    const rows: RecallRow[] = [];
    const own = hnswEfSearch(30);
    const sweep = [...new Set([...EF_SEARCH_SWEEP, own])].sort((a, b) => a - b);
    const cases = [
      ...sweep.flatMap((ef) => [
        { efSearch: ef, iterative: true, filtered: false },
        { efSearch: ef, iterative: true, filtered: true },
      ]),
      { efSearch: own, iterative: false, filtered: true },
    ];
    for (const k of cases) {
      // The search's own planner settings (SearchService.execute): no sequential scans, iterative HNSW scans.
      const settings = { enable_seqscan: 'off', 'hnsw.ef_search': String(k.efSearch), 'hnsw.iterative_scan': k.iterative ? 'relaxed_order' : 'off' };
      const truth = k.filtered ? exact.filtered : exact.all;
      const times: number[] = [];
      let recalled = 0;
      let returned = 0;
      for (const [i, t] of truth.entries()) {
        const { found, ms } = await run(leg, [vectors[i]!, store.space, k.filtered ? agent : null], settings);
        times.push(ms);
        recalled += score(found, t);
        returned += found.length;
      }
      rows.push({ ...k, recall: recalled / truth.length, returned: returned / truth.length, p50: percentile(times, 50), p99: percentile(times, 99) });
    }
    return { rows, exactMs: { all: exactMs.all / exact.all.length, filtered: exactMs.filtered / exact.filtered.length } };
  });
}

/** Sizes on disk of what search reads, in MB. */
async function diskSizes(dbUrl: string, store: VectorStore): Promise<{ name: string; mb: number }[]> {
  const relations = [
    ['memory_messages (heap)', 'memory_messages'],
    ['  full-text GIN index', 'memory_messages_agent_fts'],
    ['  agent recency index', 'memory_messages_agent_created'],
    ['  trigram GIN index', 'memory_messages_trgm'],
    ['memory_embeddings (heap)', 'memory_embeddings'],
    ['  message HNSW index', hnswIndexName(store.space, 'message')],
  ] as const;
  return sql(dbUrl, async (c) => {
    const out: { name: string; mb: number }[] = [];
    for (const [name, relation] of relations) {
      const { rows } = await c.query<{ bytes: string }>('SELECT pg_relation_size($1::regclass)::text AS bytes', [relation]);
      out.push({ name, mb: Number(rows[0]!.bytes) / 1024 / 1024 });
    }
    return out;
  });
}

interface SizeResult {
  size: number;
  rate: number;
  vectors?: { items: number; seconds: number };
  build?: number;
  samples: Samples;
  hits: Map<Mode, Map<string, Hit[]>>;
}

async function main(teardown: Teardown): Promise<string> {
  progress('Postgres: creating a throwaway database');
  const db = await createTestDatabase('keelson_bench_memory');
  teardown.push(`drop database ${db.name}`, () => db.drop());
  const server = await sql(db.url, async (c) => {
    await c.query(`ALTER DATABASE "${db.name}" SET maintenance_work_mem = '${BUILD_MAINTENANCE_WORK_MEM}'`);
    const { rows } = await c.query<{ vector: string | null; autovacuum: string; workers: string; buffers: string }>(
      `SELECT (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS vector, current_setting('autovacuum') AS autovacuum,
              current_setting('max_parallel_maintenance_workers') AS workers, current_setting('shared_buffers') AS buffers`,
    );
    return rows[0]!;
  });

  // LEXICAL: an instance without an embeddings endpoint (KEELSON_EMBEDDINGS_* are not read). It does the appends.
  const lexical = await startMemorySubgraph({
    databaseUrl: db.url,
    host: '127.0.0.1',
    port: 0,
    security,
    settings: { embeddingsMissing: 'the bench gives this instance no embeddings endpoint' },
    log: silentLogger(),
  });
  teardown.push('stop the lexical memory subgraph', () => lexical.stop());

  // HYBRID: a second instance over the same database, embedding queries through the local model
  // server. It is stopped while the store grows and booted again (building its index) at each size.
  let hybrid: RunningMemory | undefined;
  teardown.push('stop the hybrid memory subgraph', async () => {
    await hybrid?.stop();
  });
  let embeddings: { settings: EmbeddingsSettings; client: EmbeddingsClient } | undefined;
  let store: VectorStore | undefined;
  let hybridMissing: string | undefined;
  if (!server.vector) {
    hybridMissing = 'pgvector is not installed on the Postgres server (pg_available_extensions has no `vector`); install it with scripts/install-pgvector.sh';
  } else {
    progress(`pgvector ${server.vector} available: starting the local model server for the HYBRID instance`);
    const started = await startEmbeddings();
    teardown.push('stop the model server', () => started.models.stop());
    embeddings = { settings: started.settings, client: new EmbeddingsClient(started.settings) };
    store = { space: vectorSpace(started.settings), dimensions: started.settings.dimensions!, index: 'hnsw', version: server.vector };
  }
  const modes = (): Mode[] => (hybrid ? ['lexical', 'hybrid'] : ['lexical']);
  const urls = (): Partial<Record<Mode, string>> => ({ lexical: lexical.url, ...(hybrid ? { hybrid: hybrid.url } : {}) });

  const vacuum = (tables: string[]) =>
    // The steady state autovacuum keeps: statistics current, GIN pending lists merged.
    sql(db.url, async (c) => {
      for (const t of tables) await c.query(`VACUUM ANALYZE ${t}`);
      await c.query('ANALYZE memory_conversations');
    });

  if (embeddings) {
    // A first boot over the empty store creates the vector table (and the extension): from then on,
    // the boot at each size builds the indexes the bench dropped after writing that size's vectors.
    progress('booting the HYBRID instance once over the empty store (it creates the vector store)');
    await (await bootHybrid(db.url, embeddings.settings)).memory.stop();
  }
  const results: SizeResult[] = [];
  let held = 0;
  let vectorsUpTo = '0';
  let plans: Map<string, ReturnType<typeof vectorScans>> | undefined;
  let recall: Awaited<ReturnType<typeof measureRecall>> | undefined;
  let disk: Awaited<ReturnType<typeof diskSizes>> | undefined;
  for (const size of SIZES) {
    if (hybrid) {
      await hybrid.stop();
      hybrid = undefined;
    }
    progress(`seeding to ${size.toLocaleString('en')} messages (${size / PER_CONVERSATION} conversations, appended through the lexical instance)`);
    const rate = await grow(lexical, held, size);
    held = size;
    await vacuum(['memory_messages']);
    let vectors: SizeResult['vectors'];
    let build: number | undefined;
    if (embeddings) {
      const space = store!.space;
      await sql(db.url, (c) => c.query(`DROP INDEX ${hnswIndexName(space, 'message')}, ${hnswIndexName(space, 'summary')}`));
      progress(`writing vectors of messages past id ${vectorsUpTo} (COPY; each the model server's vector of its text)`);
      const written = await writeVectors(db.url, store!, vectorsUpTo);
      vectorsUpTo = written.lastId;
      vectors = { items: written.items, seconds: written.seconds };
      progress(`booting the HYBRID instance: its boot builds the HNSW index over ${size.toLocaleString('en')} vectors`);
      const booted = await bootHybrid(db.url, embeddings.settings);
      hybrid = booted.memory;
      build = booted.seconds;
      if (hybrid.services.mode.mode !== 'HYBRID') throw new Error(`the HYBRID instance came up ${hybrid.services.mode.reason}`);
      progress(`  booted in ${fixed(build, 1)} s`);
      await vacuum(['memory_embeddings']);
    }
    const phrase = (await lexical.services.search.search({ query: `"${PHRASE}"`, limit: 1 }))[0]?.id;
    const ident = (await lexical.services.search.search({ query: 'reconcileQuokkaSnapshots', limit: 1 }))[0]?.id;
    const hits = new Map<Mode, Map<string, Hit[]>>();
    for (const m of modes()) hits.set(m, await check(urls()[m]!, { phrase: phrase!, ident: ident! }));
    progress(`measuring at ${size.toLocaleString('en')}: ${ROUNDS} rounds × ${REQUESTS_PER_ROUND} sequential requests per query and mode (${modes().join(', ')})`);
    const samples = await measure(urls());
    if (hybrid && store && size === SIZES.at(-1)) {
      plans = new Map();
      for (const q of QUERIES) plans.set(q.label, vectorScans(await hybrid.services.search.explain(q.args)));
      progress(`recall of the HNSW index at ${size.toLocaleString('en')}: exact neighbours of ${RECALL_QUERIES} query vectors first (index scans off)`);
      recall = await measureRecall(db.url, store, QUERIES[4].args.agent);
      disk = await diskSizes(db.url, store);
    }
    results.push({ size, rate, vectors, build, samples, hits });
  }

  // The indexer's own rate into the largest index: new messages embedded through the model server.
  let indexer: { embedded: Embedded; endpointRate: number } | undefined;
  if (hybrid && embeddings) {
    progress(`appending ${INDEXER_TAIL.toLocaleString('en')} more messages; the HYBRID instance's VectorIndexer embeds them into the ${held.toLocaleString('en')}-vector index`);
    await grow(lexical, held, held + INDEXER_TAIL);
    const embedded = await embed(db.url, hybrid, held + INDEXER_TAIL);
    // The model server alone, same batches, on the first slice's texts: how much of the cost is not Postgres.
    const texts = slice(0, 50).map((e) => e.content);
    const t0 = performance.now();
    for (let i = 0; i < texts.length; i += 64) await embeddings.client.embed(texts.slice(i, i + 64));
    indexer = { embedded, endpointRate: (texts.length / (performance.now() - t0)) * 1000 };
  }

  const first = results[0]!;
  const last = results.at(-1)!;
  const k = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${n / 1000}k`);
  const p = (r: SizeResult, m: Mode, label: string, q: number) => percentile(r.samples.get(sampleKey(m, label))!, q);
  const measured = MODES.filter((m) => last.samples.has(sampleKey(m, QUERIES[0].label)));
  const rows = QUERIES.flatMap((q) => {
    const modeRows = measured.map((m, i) => [
      i === 0 ? q.label : '',
      m,
      ...results.flatMap((r) => [fixed(p(r, m, q.label, 50), 2), fixed(p(r, m, q.label, 99), 2)]),
      times(p(last, m, q.label, 50) / p(first, m, q.label, 50)),
    ]);
    if (!measured.includes('hybrid')) return modeRows;
    const ratio = (r: SizeResult, pc: number) => times(p(r, 'hybrid', q.label, pc) / p(r, 'lexical', q.label, pc));
    return [...modeRows, ['', 'hyb/lex', ...results.flatMap((r) => [ratio(r, 50), ratio(r, 99)]), '']];
  });
  const worstP99 = (m: Mode) => {
    const worst = QUERIES.map((q) => ({ label: q.label, ms: p(last, m, q.label, 99) })).sort((a, b) => b.ms - a.ms)[0]!;
    return `${fixed(worst.ms, 1)} ms (${worst.label})`;
  };
  const own = recall?.rows.find((r) => r.efSearch === hnswEfSearch(30) && r.iterative && !r.filtered);
  const ownFiltered = recall?.rows.find((r) => r.efSearch === hnswEfSearch(30) && r.iterative && r.filtered);

  const out = [
    '',
    `Keelson Mesh memory bench — node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} at the end`,
    `at ${k(last.size)} messages: worst p99 lexical ${worstP99('lexical')}${measured.includes('hybrid') ? `, hybrid ${worstP99('hybrid')}` : ''} (target ≤ 50 ms)`,
    own && ownFiltered
      ? `recall@10 of the HNSW index against exact search at ${k(last.size)}: ${fixed(own.recall, 3)}, one agent ${fixed(ownFiltered.recall, 3)} (ef_search ${own.efSearch}, the search's own; target ≥ 0.9)`
      : `recall: not measured — ${hybridMissing}`,
    '',
    'search modes, one memory subgraph instance each over the same database:',
    `   ${lexical.services.mode.reason}`,
    hybrid ? `   ${hybrid.services.mode.reason}` : `   hybrid: NOT MEASURED — ${hybridMissing}`,
    '',
    `memorySearch over GraphQL, straight to the memory subgraph (limit 10, scope BOTH), ${ROUNDS * REQUESTS_PER_ROUND} sequential`,
    `requests per query, mode and size, ${ROUNDS} interleaved rounds after ${WARMUP_REQUESTS} warm-up requests each; latency in ms.`,
    ...QUERIES.map((q) => `   ${q.label.padEnd(10)} = ${JSON.stringify(q.args)}  (${q.note})`),
    '',
    table(
      ['query', 'mode', ...results.flatMap((r) => [`${k(r.size)} p50`, `${k(r.size)} p99`]), `p50 ${k(last.size)}/${k(first.size)}`],
      rows,
      ['left', 'left', ...results.flatMap(() => ['right', 'right'] as const), 'right'],
    ),
    '',
    `appends (multi-row INSERT, ${SEED_BATCH.toLocaleString('en')} per call, through the lexical instance): ` +
      results.map((r, i) => `${fixed(r.rate, 0)} messages/s ${i === 0 ? 'to' : `from ${k(results[i - 1]!.size)} to`} ${k(r.size)}`).join(', '),
  ];
  if (hybrid && recall && disk && indexer && plans) {
    out.push(
      `vectors (COPY, the model server's vector of each text computed in the bench): ` +
        results.map((r) => `${fixed(r.vectors!.items / r.vectors!.seconds, 0)}/s to ${k(r.size)}`).join(', '),
      `HNSW build (the HYBRID instance's boot, maintenance_work_mem ${BUILD_MAINTENANCE_WORK_MEM}, max_parallel_maintenance_workers ${server.workers}, shared_buffers ${server.buffers}): ` +
        results.map((r) => `${fixed(r.build!, 1)} s over ${k(r.size)}`).join(', '),
      '',
      `on disk at ${k(last.size)} messages (pg_relation_size):`,
      ...disk.map((d) => `   ${d.name.padEnd(26)} ${fixed(d.mb, 0).padStart(7)} MB`),
      '',
      `recall@10 of the message HNSW index at ${k(last.size)} (m 16, ef_construction 64: pgvector's defaults), against exact search (a`,
      `scan of every vector: ${fixed(recall.exactMs.all, 0)} ms per query, ${fixed(recall.exactMs.filtered, 0)} ms with the agent filter); ${RECALL_QUERIES} query vectors`,
      `(${RECALL_FILTERED_QUERIES} with the filter ${JSON.stringify(QUERIES[4].args.agent)}, a fifth of the store) of held-out messages; latency of the statement alone, ms:`,
      table(
        ['ef_search', 'iterative scan', 'filter', 'recall@10', 'rows', 'p50', 'p99'],
        recall.rows.map((r) => [
          `${r.efSearch}${r.efSearch === hnswEfSearch(30) ? ' (search)' : ''}`,
          r.iterative ? 'relaxed_order' : 'off',
          r.filtered ? 'one agent' : 'none',
          fixed(r.recall, 3),
          fixed(r.returned, 1),
          fixed(r.p50, 2),
          fixed(r.p99, 2),
        ]),
        ['right', 'left', 'left', 'right', 'right', 'right', 'right'],
      ),
      '',
      `embedding through the indexer (64 per request, model server, into the ${k(held)}-vector index): ${indexer.embedded.items.toLocaleString('en')} in ${fixed(indexer.embedded.seconds, 1)} s` +
        ` (${fixed(indexer.embedded.items / indexer.embedded.seconds, 0)} items/s); the model server alone answers ${fixed(indexer.endpointRate, 0)} items/s in the same batches` +
        (server.autovacuum === 'on' ? '' : `; autovacuum is off on this server: the bench ran ANALYZE memory_embeddings every ${ANALYZE_EVERY_MS / 1000} s while embedding`),
      '',
      `vector leg at ${k(last.size)} (EXPLAIN ANALYZE of each query on the HYBRID instance; its nodes on memory_embeddings — the summaries'`,
      "leg, with no summaries in the corpus, probes memory_embeddings' primary key and finds none):",
      ...QUERIES.map((q) => {
        const plan = plans!.get(q.label)!;
        return `   ${q.label.padEnd(10)} ${plan.hnsw ? 'HNSW index: yes' : 'HNSW index: NO '}  ${plan.nodes.join('; ') || '(no node on memory_embeddings)'}`;
      }),
      '',
      'top 10 hits, hybrid against lexical (the same requests, from the check before timing): how many each returned, how many',
      "of hybrid's came by the vector leg (and by it alone), and how many hybrid shares with lexical:",
      table(
        ['query', 'size', 'lexical', 'hybrid', 'by vector', 'vector only', 'shared'],
        QUERIES.flatMap((q) =>
          results.map((r, i) => {
            const lex = r.hits.get('lexical')!.get(q.label)!;
            const hyb = r.hits.get('hybrid')!.get(q.label)!;
            const lexIds = new Set(lex.map((h) => h.messageId));
            return [
              i === 0 ? q.label : '',
              k(r.size),
              String(lex.length),
              String(hyb.length),
              String(hyb.filter((h) => h.matchedBy.includes('VECTOR')).length),
              String(hyb.filter((h) => h.matchedBy.every((m) => m === 'VECTOR')).length),
              String(hyb.filter((h) => lexIds.has(h.messageId)).length),
            ];
          }),
        ),
        ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
      ),
    );
  } else {
    out.push('', `hybrid: not measured — ${hybridMissing}.`);
  }
  return `${out.join('\n')}\n`;
}

runBench(main, progress);
