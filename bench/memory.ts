// `node -r ./scripts/register.js bench/memory.ts`: memorySearch latency (p50 / p99) at 10,000 and at
// 100,000 messages, printed side by side from one run. Boots the memory subgraph alone, in-process,
// against a throwaway database; progress goes to stderr, the report to stdout. See bench/README.md.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseEnv } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { memorySettings, start, type MemoryEntry, type RunningMemory } from '@keelson/subgraph-memory';
import { corpus, corpusConversation } from '../subgraphs/memory/test/support/corpus';
import { createTestDatabase } from '../test/support/db';
import { Teardown, type Progress } from './benchStack';
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
  memorySearch(query: $query, agent: $agent, limit: $limit, scope: $scope) { messageId kind snippet score conversation { agent } }
}`;

const started = performance.now();
const progress: Progress = (line) => process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);

type Hit = { messageId: string; conversation: { agent: string } };

async function search(url: string, args: Record<string, unknown>): Promise<Hit[]> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: SEARCH, variables: { limit: 10, ...args } }) });
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

/** Checks every query answers, and the planted items come first, before anything is timed. */
async function check(url: string, plantedIds: { phrase: string; ident: string }): Promise<void> {
  const first = async (args: Record<string, unknown>) => (await search(url, args))[0]?.messageId;
  if ((await first(QUERIES[0].args)) !== plantedIds.phrase) throw new Error('the planted phrase is not the first hit');
  if ((await first(QUERIES[1].args)) !== plantedIds.ident) throw new Error('the planted identifier is not the first hit');
  if ((await first(QUERIES[2].args)) !== plantedIds.ident) throw new Error('the planted path is not the first hit');
  const agentHits = await search(url, QUERIES[4].args);
  if (!agentHits.length || agentHits.some((h) => h.conversation.agent !== QUERIES[4].args.agent)) throw new Error('the agent filter leaked');
}

async function measure(url: string): Promise<Map<string, number[]>> {
  const samples = new Map<string, number[]>(QUERIES.map((q) => [q.label, []]));
  for (const q of QUERIES) for (let i = 0; i < WARMUP_REQUESTS; i++) await search(url, q.args);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? QUERIES : [...QUERIES].reverse();
    for (const q of order) {
      for (let i = 0; i < REQUESTS_PER_ROUND; i++) {
        const t0 = performance.now();
        await search(url, q.args);
        samples.get(q.label)!.push(performance.now() - t0);
      }
    }
  }
  return samples;
}

async function main(teardown: Teardown): Promise<string> {
  progress('Postgres: creating a throwaway database');
  const db = await createTestDatabase('keelson_bench_memory');
  teardown.push(`drop database ${db.name}`, () => db.drop());
  const settings = memorySettings(parseEnv(process.env));
  const memory = await start({ databaseUrl: db.url, host: '127.0.0.1', port: 0, settings, log: silentLogger() });
  teardown.push('stop the memory subgraph', () => memory.stop());
  const url = memory.url;
  const vacuum = async () => {
    // The steady state autovacuum keeps: statistics current, GIN pending lists merged.
    const { Client } = await import('pg');
    const c = new Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query('VACUUM ANALYZE memory_messages');
      await c.query('ANALYZE memory_conversations');
    } finally {
      await c.end();
    }
  };

  const results: { size: number; rate: number; samples: Map<string, number[]> }[] = [];
  let held = 0;
  for (const size of SIZES) {
    progress(`seeding to ${size.toLocaleString('en')} messages (${size / PER_CONVERSATION} conversations)`);
    const rate = await grow(memory, held, size);
    held = size;
    await vacuum();
    const ids = (await memory.services.search.search({ query: `"${PHRASE}"`, limit: 1 }))[0]?.id;
    const ident = (await memory.services.search.search({ query: 'reconcileQuokkaSnapshots', limit: 1 }))[0]?.id;
    await check(url, { phrase: ids!, ident: ident! });
    progress(`measuring at ${size.toLocaleString('en')}: ${ROUNDS} rounds × ${REQUESTS_PER_ROUND} sequential requests per query`);
    results.push({ size, rate, samples: await measure(url) });
  }

  const [small, large] = results as [(typeof results)[0], (typeof results)[0]];
  const k = (n: number) => `${n / 1000}k`;
  const rows = QUERIES.map((q) => {
    const s = small.samples.get(q.label)!;
    const l = large.samples.get(q.label)!;
    return [q.label, fixed(percentile(s, 50), 2), fixed(percentile(s, 99), 2), fixed(percentile(l, 50), 2), fixed(percentile(l, 99), 2), times(percentile(l, 50) / percentile(s, 50))];
  });
  const out = [
    '',
    `Keelson Mesh memory bench — node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} at the end`,
    `search mode: ${memory.services.mode.reason}`,
    '',
    `memorySearch over GraphQL, straight to the memory subgraph (limit 10, scope BOTH), ${ROUNDS * REQUESTS_PER_ROUND} sequential`,
    `requests per query and size, ${ROUNDS} interleaved rounds after ${WARMUP_REQUESTS} warm-up requests each; latency in ms.`,
    ...QUERIES.map((q) => `   ${q.label.padEnd(10)} = ${JSON.stringify(q.args)}  (${q.note})`),
    '',
    table(
      ['query', `${k(small.size)} p50`, `${k(small.size)} p99`, `${k(large.size)} p50`, `${k(large.size)} p99`, `p50 ${k(large.size)}/${k(small.size)}`],
      rows,
      ['left', 'right', 'right', 'right', 'right', 'right'],
    ),
    '',
    `appends (multi-row INSERT, ${SEED_BATCH.toLocaleString('en')} per call): ${fixed(small.rate, 0)} messages/s to ${k(small.size)}, ${fixed(large.rate, 0)} messages/s from ${k(small.size)} to ${k(large.size)}`,
  ];
  return `${out.join('\n')}\n`;
}

async function run(): Promise<number> {
  const teardown = new Teardown();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    progress(`${signal}: cleaning up`);
    void teardown.run(progress).finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let code = 0;
  let report = '';
  try {
    report = await main(teardown);
  } catch (err) {
    code = 1;
    if (!interrupted) process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  } finally {
    await teardown.run(progress);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  progress(code === 0 ? 'done' : 'failed');
  process.stdout.write(report);
  return code;
}

void run().then((code) => {
  process.exitCode = code;
});
