// `node -r ./scripts/register.js bench/memory.ts`: memorySearch latency (p50 / p99) at 10,000 and at
// 100,000 messages, LEXICAL and HYBRID (pgvector HNSW, vectors from the local model server) side by
// side from one run. Boots the memory subgraph alone, in-process, twice over one throwaway database
// (one instance per mode); progress goes to stderr, the report to stdout. See bench/README.md.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { silentLogger, serviceIdentity, testSecurity } from '@keelson/service';
import { EmbeddingsClient, startMemorySubgraph, type MemoryEntry, type RunningMemory } from '@keelson/subgraph-memory';
import { Client } from 'pg';
import { corpus, corpusConversation } from '@keelson/subgraph-memory/test/support/corpus';
import { startEmbeddings } from '@keelson/subgraph-memory/test/support/pgvector';
import { createTestDatabase } from '../test/support/db';
import { runBench, stderrProgress, type Teardown } from './benchStack';
import { fixed, percentile, table, times } from './report';

const PER_CONVERSATION = 200;
const SIZES = [10_000, 100_000] as const;
/** Rounds interleave the queries, so drift and noise fall on all of them alike. */
const ROUNDS = 8;
const REQUESTS_PER_ROUND = 25;
const WARMUP_REQUESTS = 20;
const SEED_BATCH = 10_000;

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
    progress(`  ${Math.min(total, m + SEED_BATCH).toLocaleString('en')} messages`);
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
async function main(teardown: Teardown): Promise<string> {
  progress('Postgres: creating a throwaway database');
  const db = await createTestDatabase('keelson_bench_memory');
  teardown.push(`drop database ${db.name}`, () => db.drop());
  const server = await sql(db.url, async (c) => {
    const { rows } = await c.query<{ vector: string | null; autovacuum: string }>(
      "SELECT (SELECT default_version FROM pg_available_extensions WHERE name = 'vector') AS vector, current_setting('autovacuum') AS autovacuum",
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

  // HYBRID: a second instance over the same database, embedding through the local model server.
  let hybrid: RunningMemory | undefined;
  let embeddingsClient: EmbeddingsClient | undefined;
  let hybridMissing: string | undefined;
  if (!server.vector) {
    hybridMissing = 'pgvector is not installed on the Postgres server (pg_available_extensions has no `vector`); install it with scripts/install-pgvector.sh';
  } else {
    progress(`pgvector ${server.vector} available: starting the local model server and a HYBRID instance`);
    const embeddings = await startEmbeddings();
    teardown.push('stop the model server', () => embeddings.models.stop());
    embeddingsClient = new EmbeddingsClient(embeddings.settings);
    const h = await startMemorySubgraph({ databaseUrl: db.url, host: '127.0.0.1', port: 0, security, settings: { embeddings: embeddings.settings }, log: silentLogger() });
    teardown.push('stop the hybrid memory subgraph', () => h.stop());
    if (h.services.mode.mode === 'HYBRID' && h.services.indexer) hybrid = h;
    else hybridMissing = `the HYBRID instance came up ${h.services.mode.reason}`;
  }
  const urls: Partial<Record<Mode, string>> = { lexical: lexical.url, ...(hybrid ? { hybrid: hybrid.url } : {}) };
  const modes = MODES.filter((m) => urls[m]);

  const vacuum = (tables: string[]) =>
    // The steady state autovacuum keeps: statistics current, GIN pending lists merged.
    sql(db.url, async (c) => {
      for (const t of tables) await c.query(`VACUUM ANALYZE ${t}`);
      await c.query('ANALYZE memory_conversations');
    });

  interface SizeResult {
    size: number;
    rate: number;
    embedded?: Embedded;
    samples: Samples;
    hits: Map<Mode, Map<string, Hit[]>>;
    plans?: Map<string, ReturnType<typeof vectorScans>>;
  }
  const results: SizeResult[] = [];
  let endpointRate: number | undefined;
  let held = 0;
  for (const size of SIZES) {
    progress(`seeding to ${size.toLocaleString('en')} messages (${size / PER_CONVERSATION} conversations)`);
    const rate = await grow(lexical, held, size);
    const from = held;
    held = size;
    await vacuum(['memory_messages']);
    let embedded: Embedded | undefined;
    if (hybrid) {
      progress(`embedding ${(size - from).toLocaleString('en')} messages (the HYBRID instance's VectorIndexer, local model server, HNSW inserts)`);
      embedded = await embed(db.url, hybrid, size);
      progress(`  embedded ${embedded.items.toLocaleString('en')} in ${fixed(embedded.seconds, 1)} s`);
      await vacuum(['memory_embeddings']);
      if (endpointRate === undefined) {
        // The model server alone, same batches, on the first slice's texts: how much of the cost is not Postgres.
        const texts = slice(0, 50).map((e) => e.content);
        const t0 = performance.now();
        for (let i = 0; i < texts.length; i += 64) await embeddingsClient!.embed(texts.slice(i, i + 64));
        endpointRate = (texts.length / (performance.now() - t0)) * 1000;
      }
    }
    const phrase = (await lexical.services.search.search({ query: `"${PHRASE}"`, limit: 1 }))[0]?.id;
    const ident = (await lexical.services.search.search({ query: 'reconcileQuokkaSnapshots', limit: 1 }))[0]?.id;
    const hits = new Map<Mode, Map<string, Hit[]>>();
    for (const m of modes) hits.set(m, await check(urls[m]!, { phrase: phrase!, ident: ident! }));
    progress(`measuring at ${size.toLocaleString('en')}: ${ROUNDS} rounds × ${REQUESTS_PER_ROUND} sequential requests per query and mode (${modes.join(', ')})`);
    const samples = await measure(urls);
    let plans: SizeResult['plans'];
    if (hybrid && size === SIZES[SIZES.length - 1]) {
      plans = new Map();
      for (const q of QUERIES) plans.set(q.label, vectorScans(await hybrid.services.search.explain(q.args)));
    }
    results.push({ size, rate, embedded, samples, hits, plans });
  }

  const [small, large] = results as [SizeResult, SizeResult];
  const k = (n: number) => `${n / 1000}k`;
  const p = (r: SizeResult, m: Mode, label: string, q: number) => percentile(r.samples.get(sampleKey(m, label))!, q);
  const rows = QUERIES.flatMap((q) => {
    const modeRows = modes.map((m, i) => [
      i === 0 ? q.label : '',
      m,
      fixed(p(small, m, q.label, 50), 2),
      fixed(p(small, m, q.label, 99), 2),
      fixed(p(large, m, q.label, 50), 2),
      fixed(p(large, m, q.label, 99), 2),
      times(p(large, m, q.label, 50) / p(small, m, q.label, 50)),
    ]);
    if (!hybrid) return modeRows;
    const ratio = (r: SizeResult, pc: number) => times(p(r, 'hybrid', q.label, pc) / p(r, 'lexical', q.label, pc));
    return [...modeRows, ['', 'hyb/lex', ratio(small, 50), ratio(small, 99), ratio(large, 50), ratio(large, 99), '']];
  });

  const out = [
    '',
    `Keelson Mesh memory bench — node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} at the end`,
    'search modes, one memory subgraph instance each over the same database:',
    `   ${lexical.services.mode.reason}`,
    hybrid ? `   ${hybrid.services.mode.reason}` : `   hybrid: NOT MEASURED — ${hybridMissing}`,
    '',
    `memorySearch over GraphQL, straight to the memory subgraph (limit 10, scope BOTH), ${ROUNDS * REQUESTS_PER_ROUND} sequential`,
    `requests per query, mode and size, ${ROUNDS} interleaved rounds after ${WARMUP_REQUESTS} warm-up requests each; latency in ms.`,
    ...QUERIES.map((q) => `   ${q.label.padEnd(10)} = ${JSON.stringify(q.args)}  (${q.note})`),
    '',
    table(
      ['query', 'mode', `${k(small.size)} p50`, `${k(small.size)} p99`, `${k(large.size)} p50`, `${k(large.size)} p99`, `p50 ${k(large.size)}/${k(small.size)}`],
      rows,
      ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
    ),
    '',
    `appends (multi-row INSERT, ${SEED_BATCH.toLocaleString('en')} per call): ${fixed(small.rate, 0)} messages/s to ${k(small.size)}, ${fixed(large.rate, 0)} messages/s from ${k(small.size)} to ${k(large.size)}`,
  ];
  if (hybrid) {
    const e = (r: SizeResult) => `${r.embedded!.items.toLocaleString('en')} in ${fixed(r.embedded!.seconds, 1)} s (${fixed(r.embedded!.items / r.embedded!.seconds, 0)} items/s)`;
    out.push(
      `embedding (the HYBRID instance's VectorIndexer, 64 per request, into the HNSW index): ${e(small)} to ${k(small.size)},`,
      `   ${e(large)} from ${k(small.size)} to ${k(large.size)}; the model server alone answers ${fixed(endpointRate!, 0)} items/s in the same batches,`,
      '   so the rest is Postgres (HNSW inserts)' +
        (server.autovacuum === 'on' ? '' : `; autovacuum is off on this server: the bench ran ANALYZE memory_embeddings every ${ANALYZE_EVERY_MS / 1000} s while embedding`),
      '',
      `vector leg at ${k(large.size)} (EXPLAIN ANALYZE of each query on the HYBRID instance; its nodes on memory_embeddings — the summaries'`,
      "leg, with no summaries in the corpus, probes memory_embeddings' primary key and finds none):",
      ...QUERIES.map((q) => {
        const plan = large.plans!.get(q.label)!;
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
