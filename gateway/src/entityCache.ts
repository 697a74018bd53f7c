import { EventNotifier } from '@keelson/platform';
import type { Caller } from '@keelson/schema';
import { metricsRegistry, type Logger } from '@keelson/service';
import type { GraphQLSchema } from 'graphql';
import { Counter, Gauge, type Registry } from 'prom-client';
import { CACHEABLE, changesOf, classifyFetch, subgraphsOfStream, type FetchKind } from './cachePolicy';

export interface EntityCacheOptions {
  /** The mesh's database: the cache LISTENs on its event channel. */
  databaseUrl: string;
  log: Logger;
  /** Entries kept at most per subgraph (oldest dropped first). @default 20000 */
  maxEntries?: number;
  /** Answers larger than this (bytes of JSON) are not kept. @default 1 MiB */
  maxEntryBytes?: number;
  /** Bytes of JSON all answers hold together, over every subgraph (the oldest go first). @default 64 MiB */
  maxBytes?: number;
  /** Whole responses kept at most, and the bytes of JSON their fetches' answers add up to, over all of them. @default 20000, 64 MiB */
  maxResponses?: number;
  maxResponseBytes?: number;
  /** First reconnect delay after the LISTEN connection drops; doubles up to 5 s. @default 100 */
  reconnectDelayMs?: number;
  /** application_name of the LISTEN connection (tests find it by this). @default keelson-gateway-cache */
  applicationName?: string;
}

/** Where a fill started: stored only if nothing that could change its answer happened since. */
export interface FillTicket {
  readonly subgraph: string;
  /** The fetch's operation text (its entries drop together) and the fields it selects. */
  readonly query: string;
  readonly fields: ReadonlySet<string>;
  /** `stamp(subgraph, fields)` when the fetch was sent. */
  readonly stamp: number;
  readonly epoch: number;
}

/** A fetch a response was made of: current while its fields' stamp is. */
interface FetchStamp {
  readonly subgraph: string;
  readonly fields: ReadonlySet<string>;
  readonly stamp: number;
}

/** What one client query's fetches were, while it executes (keyed by its context object). */
interface ResponseRecord {
  readonly epoch: number;
  readonly fetches: FetchStamp[];
  bytes: number;
  /** A fetch that is not cacheable (or failed): the response is not kept. */
  uncacheable: boolean;
  /** A fetch of what the cache keeps was made (answered from it, filled, or failed). */
  readsCached: boolean;
}

/** The most client queries `readsNothingCached` remembers, and the characters of their keys. */
const MAX_UNCACHED_QUERIES = 10_000;
const MAX_UNCACHED_QUERY_CHARS = 16 << 20;

/** A kept response: its data, current while every fetch it was made of is. */
interface KeptResponse {
  readonly data: Record<string, unknown>;
  readonly fetches: readonly FetchStamp[];
  readonly epoch: number;
  readonly bytes: number;
}

/** One subgraph operation's entries (per variables and caller), and the fields it selects. */
interface Group {
  readonly fields: ReadonlySet<string>;
  readonly keys: Set<string>;
}

/** Why entries were dropped (`keelson_gateway_cache_invalidations_total{cause}`). */
export type InvalidationCause = 'event' | 'mutation' | 'listener' | 'reload';

interface CacheMetrics {
  responses: Counter<'outcome'>;
  hits: Counter<'subgraph'>;
  misses: Counter<'subgraph'>;
  invalidations: Counter<'subgraph' | 'cause'>;
  entries: Gauge;
  responsesHeld: Gauge<'measure'>;
}

const entrySources = new Set<() => { entries: number; responses: number; responseBytes: number }>();

/** The cache's series in the process registry, created once per process (tests start several gateways). */
function cacheMetrics(registry: Registry): CacheMetrics {
  const existing = <T>(name: string) => registry.getSingleMetric(name) as T | undefined;
  return {
    responses:
      existing<Counter<'outcome'>>('keelson_gateway_cache_responses_total') ??
      new Counter({
        name: 'keelson_gateway_cache_responses_total',
        help: 'Client queries the gateway looked up whole in its entity cache, by outcome: hit (answered without executing its plan) or miss',
        labelNames: ['outcome'],
        registers: [registry],
      }),
    hits:
      existing<Counter<'subgraph'>>('keelson_gateway_cache_hits_total') ??
      new Counter({ name: 'keelson_gateway_cache_hits_total', help: 'Subgraph fetches the gateway answered from its entity cache, per subgraph', labelNames: ['subgraph'], registers: [registry] }),
    misses:
      existing<Counter<'subgraph'>>('keelson_gateway_cache_misses_total') ??
      new Counter({
        name: 'keelson_gateway_cache_misses_total',
        help: 'Cacheable subgraph fetches the gateway sent to the subgraph (nothing cached, or the cache not serving), per subgraph',
        labelNames: ['subgraph'],
        registers: [registry],
      }),
    invalidations:
      existing<Counter<'subgraph' | 'cause'>>('keelson_gateway_cache_invalidations_total') ??
      new Counter({
        name: 'keelson_gateway_cache_invalidations_total',
        help: 'Times the entity cache dropped a subgraph\'s entries, per subgraph and cause: event (its stream\'s NOTIFY), mutation (one through this gateway answered), listener (LISTEN lost or back), reload',
        labelNames: ['subgraph', 'cause'],
        registers: [registry],
      }),
    entries:
      existing<Gauge>('keelson_gateway_cache_entries') ??
      new Gauge({
        name: 'keelson_gateway_cache_entries',
        help: 'Answers held in the gateway\'s entity cache now',
        registers: [registry],
        collect() {
          let n = 0;
          for (const source of entrySources) n += source().entries;
          this.set(n);
        },
      }),
    responsesHeld:
      existing<Gauge<'measure'>>('keelson_gateway_cache_responses') ??
      new Gauge({
        name: 'keelson_gateway_cache_responses',
        help: 'Whole responses held in the gateway\'s entity cache now: count, and bytes (the JSON of the fetch answers they were made of, what maxResponseBytes bounds)',
        labelNames: ['measure'],
        registers: [registry],
        collect() {
          let count = 0;
          let bytes = 0;
          for (const source of entrySources) {
            const held = source();
            count += held.responses;
            bytes += held.responseBytes;
          }
          this.set({ measure: 'count' }, count);
          this.set({ measure: 'bytes' }, bytes);
        },
      }),
  };
}

/** A client query's key among kept responses: its text, operation name, variables and caller. */
export function responseKey(source: string, operationName: string | null | undefined, variables: Record<string, unknown> | undefined, caller: Caller): string {
  return JSON.stringify([source, operationName ?? null, variables ?? {}, callerCacheKey(caller)]);
}

/** The part of the key that says who asked: two callers never share an answer, whatever their scopes. */
export function callerCacheKey(caller: Caller): string {
  return `${caller.kind}\u0000${caller.subject}\u0000${caller.tokenId ?? ''}\u0000${[...caller.scopes].sort().join(',')}`;
}

/**
 * The gateway's cache of subgraph answers, dropped by the event log. Entries are keyed by subgraph,
 * operation text, variables and caller; only fetches `classifyFetch` calls cacheable are kept.
 *
 * Exactness: an event drops, as its NOTIFY arrives (the commit is visible before it is notified),
 * the entries of the subgraphs its stream feeds that select a field its type may change (every
 * entry of them for a type the policy does not list); a fill is stored only if no drop that could
 * touch its fields happened between the fetch's start and its end (a generation per subgraph and
 * per field, summed into the fetch's stamp). While the LISTEN connection is down nothing is served
 * or stored; losing it and getting it back drop everything. A mutation through this gateway drops
 * what it may have changed when it answers, so a caller reads its own writes; one not known to be
 * evented also stops serving while in flight.
 */
export class EntityCache {
  /** Answers by subgraph, then key (insertion order: the oldest goes first past `maxEntries`). */
  private readonly entries = new Map<string, Map<string, { json: string; query: string }>>();
  /** The same entries by subgraph, then operation text: what an event's fields drop. */
  private readonly groups = new Map<string, Map<string, Group>>();
  /** Drops of a whole subgraph, and of entries selecting one field (`subgraph\0Type.field`): only ever counted up. */
  private readonly generations = new Map<string, number>();
  private readonly fieldGenerations = new Map<string, number>();
  private readonly kinds = new Map<string, FetchKind>();
  /** Client queries (response keys) whose last execution fetched only what the cache does not keep, oldest first. */
  private readonly uncachedQueries = new Set<string>();
  private uncachedQueryChars = 0;
  /** Whole responses by client query, variables and caller (insertion order: the oldest goes first). */
  private readonly responses = new Map<string, KeptResponse>();
  private responseBytes = 0;
  private readonly maxResponses: number;
  private readonly maxResponseBytes: number;
  /** The fetches of client queries executing now, by their context object. */
  private readonly records = new WeakMap<object, ResponseRecord>();
  private readonly heads = new Map<string, number>();
  private readonly schemas = new Map<string, GraphQLSchema>();
  private readonly metrics: CacheMetrics;
  private readonly maxEntries: number;
  private readonly maxEntryBytes: number;
  private readonly maxBytes: number;
  /** Bytes of JSON the answers hold, per subgraph. */
  private readonly bytes = new Map<string, number>();
  private readonly countEntries = () => ({ entries: this.size, responses: this.responses.size, responseBytes: this.responseBytes });
  /** The LISTEN connection (the platform's notifier, a private one: its own connection and name). */
  private readonly notifier: EventNotifier;
  private epoch = 0;
  private up = false;
  /** Mutations not known to be evented, in flight: nothing is served meanwhile. */
  private unevented = 0;
  private stopped = false;
  private waiters: { stream: string; seq: number; resolve: () => void }[] = [];

  constructor(private readonly opts: EntityCacheOptions) {
    this.metrics = cacheMetrics(metricsRegistry());
    entrySources.add(this.countEntries);
    this.maxEntries = opts.maxEntries ?? 20_000;
    this.maxEntryBytes = opts.maxEntryBytes ?? 1 << 20;
    this.maxBytes = opts.maxBytes ?? 64 << 20;
    this.maxResponses = opts.maxResponses ?? 20_000;
    this.maxResponseBytes = opts.maxResponseBytes ?? 64 << 20;
    this.notifier = new EventNotifier({
      url: opts.databaseUrl,
      log: opts.log,
      applicationName: opts.applicationName ?? 'keelson-gateway-cache',
      ...(opts.reconnectDelayMs !== undefined ? { reconnectDelayMs: opts.reconnectDelayMs } : {}),
    });
    this.notifier.watch({
      event: (stream, seq, type) => {
        for (const subgraph of subgraphsOfStream(stream)) this.drop(subgraph, 'event', changesOf(subgraph, stream, type));
        if (Number.isSafeInteger(seq) && seq > (this.heads.get(stream) ?? 0)) this.heads.set(stream, seq);
        if (this.waiters.length) this.wakeWaiters();
      },
      lost: () => {
        if (this.stopped) return;
        this.up = false;
        this.epoch += 1;
        this.dropAll('listener');
        this.opts.log.warn('gateway cache: LISTEN connection lost; serving uncached until it is back');
      },
      listening: () => {
        if (this.stopped) return;
        // Whatever committed while nobody listened is unknown: start empty, and no fill from before counts.
        this.epoch += 1;
        this.dropAll('listener');
        this.up = true;
      },
    });
  }

  /** Connects the LISTEN connection; until it is up the cache serves nothing (and a failure here only logs: it retries). */
  async start(): Promise<void> {
    await this.notifier.start();
  }

  /** Whether the LISTEN connection is up (the cache serves only then). */
  get listening(): boolean {
    return this.up;
  }

  /** The backend pid of the LISTEN connection (tests terminate it), undefined while down. */
  get backendPid(): number | undefined {
    return this.notifier.backendPid;
  }

  /** The highest sequence of `stream` this cache has been notified of (0 when none). */
  seen(stream: string): number {
    return this.heads.get(stream) ?? 0;
  }

  /** Resolves once this cache has been notified of `stream` at `seq` or later (the NOTIFY hop, measured by tests and benches). */
  whenSeen(stream: string, seq: number): Promise<void> {
    if (this.seen(stream) >= seq) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ stream, seq, resolve }));
  }

  /** Answers held now. */
  get size(): number {
    let n = 0;
    for (const held of this.entries.values()) n += held.size;
    return n;
  }

  /** The schemas fetches are typed against (each subgraph's, from the supergraph in force): a new graph drops everything. */
  useSchemas(schemas: Map<string, GraphQLSchema>): void {
    this.schemas.clear();
    for (const [name, schema] of schemas) this.schemas.set(name, schema);
    this.kinds.clear();
    // A new graph may plan a query's fetches otherwise.
    this.uncachedQueries.clear();
    this.uncachedQueryChars = 0;
    this.dropAll('reload');
  }

  /** How `query` to `subgraph` meets the cache (memoized per text). */
  kindOf(subgraph: string, query: string): FetchKind {
    const id = `${subgraph}\u0000${query}`;
    let kind = this.kinds.get(id);
    if (!kind) {
      if (this.kinds.size >= 5_000) this.kinds.clear();
      kind = classifyFetch(subgraph, this.schemas.get(subgraph), query);
      this.kinds.set(id, kind);
    }
    return kind;
  }

  /** The cached answer's JSON, or undefined (counted as a hit or a miss). */
  get(subgraph: string, key: string): string | undefined {
    const json = this.up && this.unevented === 0 ? this.entries.get(subgraph)?.get(key)?.json : undefined;
    if (json !== undefined) this.metrics.hits.inc({ subgraph });
    else this.metrics.misses.inc({ subgraph });
    return json;
  }

  /**
   * The data of a kept response to a client query (`key` from `responseKey`) if every fetch it was
   * made of is still current — then executing its plan again would fetch the same answers and shape
   * the same data — or undefined (counted as a hit or a miss).
   */
  response(key: string): Record<string, unknown> | undefined {
    const kept = this.responses.get(key);
    let data: Record<string, unknown> | undefined;
    if (kept && this.up && this.unevented === 0 && kept.epoch === this.epoch) {
      if (kept.fetches.every((f) => this.stamp(f.subgraph, f.fields) === f.stamp)) data = kept.data;
      else this.forgetResponse(key);
    }
    this.metrics.responses.inc({ outcome: data ? 'hit' : 'miss' });
    return data;
  }

  /** Starts recording the fetches of a client query about to execute (`context`: its context object). */
  beginResponse(context: object): void {
    this.records.set(context, { epoch: this.up ? this.epoch : -1, fetches: [], bytes: 0, uncacheable: false, readsCached: false });
  }

  /** A fetch of that query: cacheable, from `subgraph` selecting `fields`, current at `stamp`, its answer `bytes` long. */
  noteFetch(context: object, subgraph: string, fields: ReadonlySet<string>, stamp: number, bytes: number): void {
    const record = this.records.get(context);
    if (!record) return;
    record.fetches.push({ subgraph, fields, stamp });
    record.bytes += bytes;
    record.readsCached = true;
  }

  /** A fetch of that query the cache does not keep: its response is not kept either. */
  noteUncacheable(context: object): void {
    const record = this.records.get(context);
    if (record) record.uncacheable = true;
  }

  /** A cacheable fetch of that query that failed: its response is not kept. */
  noteFailedFetch(context: object): void {
    const record = this.records.get(context);
    if (!record) return;
    record.uncacheable = true;
    record.readsCached = true;
  }

  /**
   * Whether the last execution of the client query `key` (from `responseKey`) fetched only what the
   * cache does not keep: then nothing in its answer is the cache's to keep current, and identical
   * queries in flight may share one execution (`coalescePlugin`) as they would without the cache.
   */
  readsNothingCached(key: string): boolean {
    return this.uncachedQueries.has(key);
  }

  /** Learns from the query `key`'s execution whether it reads what the cache keeps (see `readsNothingCached`). */
  private learnReads(key: string, record: ResponseRecord): void {
    if (record.readsCached) return this.forgetUncached(key);
    if (!record.uncacheable || this.uncachedQueries.has(key)) return;
    this.uncachedQueries.add(key);
    this.uncachedQueryChars += key.length;
    while (this.uncachedQueries.size > MAX_UNCACHED_QUERIES || this.uncachedQueryChars > MAX_UNCACHED_QUERY_CHARS) {
      this.forgetUncached(this.uncachedQueries.values().next().value!);
    }
  }

  private forgetUncached(key: string): void {
    if (this.uncachedQueries.delete(key)) this.uncachedQueryChars -= key.length;
  }

  /**
   * Keeps `data`, the answer to the query `context` executed, under `key` when every fetch it made
   * was cacheable and is still current (nothing it read changed while it executed); and learns
   * whether the query reads what the cache keeps (`readsNothingCached`).
   */
  keepResponse(context: object, key: string, data: Record<string, unknown>): void {
    const record = this.records.get(context);
    this.records.delete(context);
    if (record) this.learnReads(key, record);
    if (!record || record.uncacheable || record.fetches.length === 0 || record.bytes > this.maxEntryBytes) return;
    if (!this.up || this.stopped || this.unevented > 0 || record.epoch !== this.epoch) return;
    if (!record.fetches.every((f) => this.stamp(f.subgraph, f.fields) === f.stamp)) return;
    this.forgetResponse(key);
    this.responses.set(key, { data, fetches: record.fetches, epoch: record.epoch, bytes: record.bytes });
    this.responseBytes += record.bytes;
    while (this.responses.size > this.maxResponses || this.responseBytes > this.maxResponseBytes) this.forgetResponse(this.responses.keys().next().value!);
  }

  /** Responses kept now (valid or not yet found stale). */
  get responseCount(): number {
    return this.responses.size;
  }

  /**
   * Where a fetch of `fields` from `subgraph` stands: it changes with every drop that could touch
   * them (and with LISTEN's epoch). The data source's in-flight sharing keys on it, so a fetch sent
   * after a change never joins one sent before it (whose answer may predate the change, and would
   * otherwise be stored as current).
   */
  position(subgraph: string, fields: ReadonlySet<string>): string {
    return `${this.stamp(subgraph, fields)}.${this.epoch}`;
  }

  /** Taken before a cacheable fetch of `query` (selecting `fields`) is sent. */
  ticket(subgraph: string, query: string, fields: ReadonlySet<string>): FillTicket {
    return { subgraph, query, fields, stamp: this.stamp(subgraph, fields), epoch: this.up ? this.epoch : -1 };
  }

  /** Keeps `json` under `key` unless something may have changed the answer since `ticket`. */
  fill(ticket: FillTicket, key: string, json: string): void {
    const { subgraph, query } = ticket;
    if (!this.up || this.stopped || ticket.epoch !== this.epoch || this.stamp(subgraph, ticket.fields) !== ticket.stamp) return;
    if (json.length > this.maxEntryBytes) return;
    // A refill replaces the answer (and moves it to the newest); first out, so its group is found or made after.
    this.evict(subgraph, key);
    let held = this.entries.get(subgraph);
    if (!held) this.entries.set(subgraph, (held = new Map()));
    let groups = this.groups.get(subgraph);
    if (!groups) this.groups.set(subgraph, (groups = new Map()));
    let group = groups.get(query);
    if (!group) groups.set(query, (group = { fields: ticket.fields, keys: new Set() }));
    held.set(key, { json, query });
    group.keys.add(key);
    this.bytes.set(subgraph, (this.bytes.get(subgraph) ?? 0) + json.length);
    while (held.size > this.maxEntries) this.evict(subgraph, held.keys().next().value!);
    // Past the byte bound: this subgraph's oldest first, then the other subgraphs' (never the answer just kept).
    while (this.heldBytes > this.maxBytes) {
      const victim = held.size > 1 ? subgraph : [...this.entries.keys()].find((name) => name !== subgraph && this.entries.get(name)!.size > 0);
      if (!victim) break;
      this.evict(victim, this.entries.get(victim)!.keys().next().value!);
    }
  }

  /** Bytes of JSON all answers hold now. */
  get heldBytes(): number {
    let n = 0;
    for (const b of this.bytes.values()) n += b;
    return n;
  }

  /**
   * Called as a mutation (`kind` from `kindOf`) is sent to `subgraph`; the returned function when it
   * answered (or failed). Then the entries it may have changed are dropped: those selecting the
   * fields an evented one changes, all otherwise.
   */
  mutationStarted(subgraph: string, kind: Extract<FetchKind, { kind: 'mutation' }>): () => void {
    if (!kind.evented) this.unevented += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (kind.evented) this.drop(subgraph, 'mutation', [...kind.changes]);
      else {
        this.dropAll('mutation');
        this.unevented -= 1;
      }
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.up = false;
    entrySources.delete(this.countEntries);
    this.entries.clear();
    this.groups.clear();
    this.bytes.clear();
    this.responses.clear();
    this.responseBytes = 0;
    // Nothing will be notified any more: whoever waits for a sequence stops waiting.
    for (const w of this.waiters.splice(0)) w.resolve();
    await this.notifier.stop();
  }

  private wakeWaiters(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (this.seen(w.stream) >= w.seq) w.resolve();
      else this.waiters.push(w);
    }
  }

  /** Generations of the whole subgraph and of each of `fields`, summed: it changes whenever one of them does. */
  private stamp(subgraph: string, fields: ReadonlySet<string>): number {
    let stamp = this.generations.get(subgraph) ?? 0;
    for (const field of fields) stamp += this.fieldGenerations.get(`${subgraph}\u0000${field}`) ?? 0;
    return stamp;
  }

  private forgetResponse(key: string): void {
    const kept = this.responses.get(key);
    if (!kept) return;
    this.responses.delete(key);
    this.responseBytes -= kept.bytes;
  }

  /** Removes one answer (from its subgraph's entries, its group and the byte count), if held. */
  private evict(subgraph: string, key: string): void {
    const entry = this.entries.get(subgraph)?.get(key);
    if (!entry) return;
    this.entries.get(subgraph)!.delete(key);
    this.bytes.set(subgraph, this.bytes.get(subgraph)! - entry.json.length);
    const groups = this.groups.get(subgraph)!;
    const group = groups.get(entry.query)!;
    group.keys.delete(key);
    if (group.keys.size === 0) groups.delete(entry.query);
  }

  /** Drops `subgraph`'s entries selecting one of `changed` (every entry when undefined; none when empty). */
  private drop(subgraph: string, cause: InvalidationCause, changed?: readonly string[]): void {
    if (changed === undefined) {
      this.generations.set(subgraph, (this.generations.get(subgraph) ?? 0) + 1);
      this.entries.delete(subgraph);
      this.groups.delete(subgraph);
      this.bytes.delete(subgraph);
      this.metrics.invalidations.inc({ subgraph, cause });
      return;
    }
    if (changed.length === 0) return;
    for (const field of changed) {
      const id = `${subgraph}\u0000${field}`;
      this.fieldGenerations.set(id, (this.fieldGenerations.get(id) ?? 0) + 1);
    }
    const groups = this.groups.get(subgraph);
    if (groups) {
      for (const group of [...groups.values()]) {
        if (!changed.some((field) => group.fields.has(field))) continue;
        // Evicting a group's last key removes the group.
        for (const key of [...group.keys]) this.evict(subgraph, key);
      }
    }
    this.metrics.invalidations.inc({ subgraph, cause });
  }

  private dropAll(cause: InvalidationCause): void {
    // Every response's fetches are stale now; forget them at once rather than one lookup at a time.
    this.responses.clear();
    this.responseBytes = 0;
    for (const subgraph of Object.keys(CACHEABLE)) this.drop(subgraph, cause);
  }
}
