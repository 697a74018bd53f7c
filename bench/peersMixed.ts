// bench:peers' mixed workload: reads and writes through our gateway with its entity cache on and
// off (two gateway processes over the same subgraphs), side by side. See bench/README.md.
import type { LoadClient } from './loadClient';
import { fixed, percentile, table, times } from './report';

/** Our gateway without the cache and with it (KEELSON_GATEWAY_CACHE=on). */
export type MixedTarget = 'uncached' | 'cached';
const TARGETS: MixedTarget[] = ['uncached', 'cached'];

/** Shares of reads measured: read-mostly, and half writes. */
const READ_SHARES = [95, 50] as const;
/** Federated and deep varied at 20 connections before the cache (issue 32): the 3× target's base. */
const BEFORE_RPS = { federated: 370, deep: 150 } as const;
const CONNECTIONS = 20;

/**
 * The cached gateway's bound (KEELSON_GATEWAY_CACHE_MAX_MB): above the working set of the mixed reads
 * (their responses were made of ≈170 MiB of answers), so the figures are the cache's, not its
 * eviction's. The default, 64, holds about a third of it (bench/README.md).
 */
export const CACHED_GATEWAY_MAX_MB = 256;

const TRUST = 'mutation Trust($id: ID!, $t: Boolean!) { setProjectTrust(projectId: $id, trusted: $t) { id trusted } }';

export interface MixedWorkload {
  query: 'federated' | 'deep';
  reads: (typeof READ_SHARES)[number];
  /**
   * Whether the reads select what the writes change (`trusted`, added to each read's project list):
   * then every write drops the cached project lists. Without, the reads are the varied bodies as
   * they are, whose fields no trust change touches, and the writes drop nothing they read.
   */
  seen: boolean;
  bodies: string[];
}

/** The cell's name in the tables and the measured map. */
const nameOf = (w: MixedWorkload) => `${w.query}/${w.reads}/${w.seen ? 'seen' : 'unseen'}`;

/**
 * Per read query (its varied bodies) and read share, a list of `reads.length` bodies in which writes
 * take their share: `setProjectTrust` of one of the projects, true or false (a write that changes
 * nothing commits no event). At 95% reads also with reads that select `trusted` (writes they see).
 * The load worker picks a body at random per request.
 */
export function mixedWorkloads(reads: Record<MixedWorkload['query'], string[]>, projectIds: string[]): MixedWorkload[] {
  const list: MixedWorkload[] = [];
  for (const query of ['federated', 'deep'] as const) {
    for (const share of READ_SHARES) {
      for (const seen of share === 95 ? [false, true] : [false]) {
        const readBodies = seen ? reads[query].map(selectingTrust) : reads[query];
        const writes = Math.round((readBodies.length * (100 - share)) / share);
        const writeBodies = Array.from({ length: writes }, (_, i) => JSON.stringify({ query: TRUST, variables: { id: projectIds[i % projectIds.length], t: i % 2 === 0 } }));
        list.push({ query, reads: share, seen, bodies: [...readBodies, ...writeBodies] });
      }
    }
  }
  return list;
}

/** A read body whose project list also selects `trusted`. */
function selectingTrust(body: string): string {
  const parsed = JSON.parse(body) as { query: string };
  if (!parsed.query.includes('projects { id ')) throw new Error(`a read body without "projects { id ": ${parsed.query}`);
  return JSON.stringify({ ...parsed, query: parsed.query.replace('projects { id ', 'projects { id trusted ') });
}

interface Cell {
  samplesMs: number[];
  completed: number;
  elapsedMs: number;
  perRoundRps: number[];
  hits: number;
  misses: number;
  responseHits: number;
  responseMisses: number;
}

/** What the cached gateway holds at the end: whole responses, and the bytes of the answers they were made of. */
export interface MixedHeld {
  responses: number;
  responseBytes: number;
}

/** The measured cells (by workload and target), and what the cached gateway held at the end. */
export type MixedResult = Map<string, Cell> & { held?: MixedHeld };

type Counters = Pick<Cell, 'hits' | 'misses' | 'responseHits' | 'responseMisses'>;

/** The cache counters of the cached gateway (fetches summed over subgraphs; whole responses), from its `/metrics`. */
async function cacheCounters(metricsUrl: string, headers: Record<string, string>): Promise<Counters & { held: MixedHeld }> {
  const text = await (await fetch(metricsUrl, { headers })).text();
  const sum = (name: string, labels = '') =>
    text
      .split('\n')
      .filter((l) => l.startsWith(`${name}{${labels}`) || (!labels && l.startsWith(`${name} `)))
      .reduce((total, l) => total + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return {
    held: { responses: sum('keelson_gateway_cache_responses', 'measure="count"'), responseBytes: sum('keelson_gateway_cache_responses', 'measure="bytes"') },
    hits: sum('keelson_gateway_cache_hits_total'),
    misses: sum('keelson_gateway_cache_misses_total'),
    responseHits: sum('keelson_gateway_cache_responses_total', 'outcome="hit"'),
    responseMisses: sum('keelson_gateway_cache_responses_total', 'outcome="miss"'),
  };
}

/** Posts each of `bodies` once to `url`, 10 at a time; an answer with errors fails the bench. */
async function warmCache(url: string, bodies: string[], headers: Record<string, string>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < bodies.length) {
      const payload = bodies[next++]!;
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
      const text = await res.text();
      if (res.status !== 200 || text.includes('"errors"')) throw new Error(`warming the cache: ${res.status} ${text.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: 10 }, worker));
}

/**
 * Measures every mixed workload on both targets at 20 connections: a warm-up each, then `rounds`
 * rounds in which the target that goes first alternates.
 */
export async function measureMixed(
  load: LoadClient,
  list: MixedWorkload[],
  urls: Record<MixedTarget, string>,
  headers: () => Promise<Record<string, string>>,
  opts: { rounds: number; cellMs: number; warmupMs: number; progress: (line: string) => void },
): Promise<MixedResult> {
  const cells: MixedResult = new Map<string, Cell>();
  const metricsUrl = urls.cached.replace(/\/graphql$/, '/metrics');
  // Steady state, not a cold start: every read body once through the cached gateway (its working set).
  const reads = new Set(list.flatMap((w) => w.bodies.filter((b) => !b.includes('setProjectTrust'))));
  opts.progress(`mixed: ${reads.size} read bodies once through the cached gateway, then a warm-up of ${opts.warmupMs} ms per workload and target`);
  await warmCache(urls.cached, [...reads], await headers());
  for (const w of list) for (const t of TARGETS) await load.mixed(urls[t], w.bodies, CONNECTIONS, opts.warmupMs, await headers());
  for (let round = 0; round < opts.rounds; round++) {
    opts.progress(`mixed: round ${round + 1}/${opts.rounds}`);
    for (const w of list) {
      const order = round % 2 === 0 ? TARGETS : [...TARGETS].reverse();
      for (const t of order) {
        const before = t === 'cached' ? await cacheCounters(metricsUrl, await headers()) : undefined;
        const r = await load.mixed(urls[t], w.bodies, CONNECTIONS, opts.cellMs, await headers());
        const after = before ? await cacheCounters(metricsUrl, await headers()) : undefined;
        const key = `${nameOf(w)}/${t}`;
        let c = cells.get(key);
        if (!c) cells.set(key, (c = { samplesMs: [], completed: 0, elapsedMs: 0, perRoundRps: [], hits: 0, misses: 0, responseHits: 0, responseMisses: 0 }));
        c.samplesMs.push(...r.samplesMs);
        c.completed += r.completed;
        c.elapsedMs += r.elapsedMs;
        c.perRoundRps.push((r.completed / r.elapsedMs) * 1000);
        if (before && after) {
          c.hits += after.hits - before.hits;
          c.misses += after.misses - before.misses;
          c.responseHits += after.responseHits - before.responseHits;
          c.responseMisses += after.responseMisses - before.responseMisses;
        }
      }
    }
  }
  cells.held = (await cacheCounters(metricsUrl, await headers())).held;
  return cells;
}

/** Ratios first (cached over uncached; the read-mostly cells against the figures before the cache), then the detail. */
export function reportMixed(list: MixedWorkload[], cells: MixedResult, readOnly: Partial<Record<MixedWorkload['query'], number>> = {}): string {
  const ratioRows: string[][] = [];
  const rows: string[][] = [];
  const targets: string[] = [];
  for (const w of list) {
    const stat = (t: MixedTarget) => {
      const c = cells.get(`${nameOf(w)}/${t}`)!;
      return { c, rps: (c.completed / c.elapsedMs) * 1000, p50: percentile(c.samplesMs, 50), p99: percentile(c.samplesMs, 99) };
    };
    const off = stat('uncached');
    const on = stat('cached');
    const hitRate = on.c.hits + on.c.misses > 0 ? on.c.hits / (on.c.hits + on.c.misses) : NaN;
    const responseRate = on.c.responseHits + on.c.responseMisses > 0 ? on.c.responseHits / (on.c.responseHits + on.c.responseMisses) : NaN;
    const before = BEFORE_RPS[w.query];
    const ref = readOnly[w.query];
    const seen = w.seen ? 'yes' : 'no';
    ratioRows.push([
      w.query,
      `${w.reads}%`,
      seen,
      times(on.rps / off.rps),
      times(on.p50 / off.p50),
      times(on.p99 / off.p99),
      ref && !w.seen ? times(on.rps / ref) : '',
      w.reads === 95 ? times(on.rps / before) : '',
      Number.isNaN(responseRate) ? 'none looked up' : `${fixed(responseRate * 100, 1)}%`,
      Number.isNaN(hitRate) ? 'no fetch' : `${fixed(hitRate * 100, 1)}%`,
    ]);
    for (const [t, s] of [['uncached', off], ['cached', on]] as const) {
      rows.push([w.query, `${w.reads}%`, seen, t, fixed(s.rps, 0), `${fixed(Math.min(...s.c.perRoundRps), 0)}–${fixed(Math.max(...s.c.perRoundRps), 0)}`, fixed(s.p50, 2), fixed(s.p99, 2)]);
    }
    if (w.seen) {
      targets.push(`(not a target) ${w.query} varied + trusted at 95% reads, writes the reads see: cached ${times(on.rps / off.rps)} uncached, ${times(on.rps / before)} ${before} req/s, response hit rate ${fixed(responseRate * 100, 1)}%`);
    } else if (w.reads === 95) {
      targets.push(`target: ${w.query} varied at 95% reads, cached ≥ 3× ${before} req/s (before the cache) → ${on.rps >= 3 * before ? 'met' : 'MISSED'} (${fixed(on.rps, 0)} req/s, ${times(on.rps / before)})`);
    } else {
      targets.push(`target: ${w.query} varied at ${w.reads}% reads, cached no slower than uncached → ${on.rps >= off.rps ? 'met' : 'MISSED'} (${times(on.rps / off.rps)})`);
    }
  }
  return [
    `Mixed: our gateway with its entity cache (KEELSON_GATEWAY_CACHE=on) vs without, ${CONNECTIONS} connections, reads = the varied bodies, writes = setProjectTrust`,
    '  (writes seen: no = the reads as they are, selecting no field a trust change touches; yes = the same reads selecting trusted too, so each write drops the project lists)',
    '',
    table(['query', 'reads', 'writes seen', 'cached/uncached req/s', 'p50 ratio', 'p99 ratio', 'cached/ours read-only', `cached/before (${BEFORE_RPS.federated}, ${BEFORE_RPS.deep})`, 'response hit rate', 'fetch hit rate'], ratioRows, [
      'left',
      'right',
      'left',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
      'right',
    ]),
    '  (response hit rate: queries answered whole from kept responses; fetch hit rate: of the fetches the others made, those answered from the cache)',
    ...(cells.held
      ? [`  (the cached gateway held ${cells.held.responses} whole responses at the end, made of ${fixed(cells.held.responseBytes / 2 ** 20, 1)} MiB of answers: the bound is ${CACHED_GATEWAY_MAX_MB} MiB, KEELSON_GATEWAY_CACHE_MAX_MB, and 20,000 responses)`]
      : []),
    '  (cached/ours read-only: over this run\'s ours on the same varied reads alone at 20 connections, no writes, no cache)',
    '',
    ...targets.map((t) => `  ${t}`),
    '',
    table(['query', 'reads', 'writes seen', 'target', 'req/s', 'req/s per round', 'p50 ms', 'p99 ms'], rows, ['left', 'right', 'left', 'left', 'right', 'right', 'right', 'right']),
  ].join('\n');
}
