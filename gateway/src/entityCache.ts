import { EventNotifier } from '@keelson/platform';
import type { Caller } from '@keelson/schema';
import { metricsRegistry, type Logger } from '@keelson/service';
import type { GraphQLSchema } from 'graphql';
import { Counter, Gauge, type Registry } from 'prom-client';
import { CACHEABLE, classifyFetch, subgraphsOfStream, type FetchKind } from './cachePolicy';

export interface EntityCacheOptions {
  /** The mesh's database: the cache LISTENs on its event channel. */
  databaseUrl: string;
  log: Logger;
  /** Entries kept at most per subgraph (oldest dropped first). @default 20000 */
  maxEntries?: number;
  /** Answers larger than this (bytes of JSON) are not kept. @default 1 MiB */
  maxEntryBytes?: number;
  /** First reconnect delay after the LISTEN connection drops; doubles up to 5 s. @default 100 */
  reconnectDelayMs?: number;
  /** application_name of the LISTEN connection (tests find it by this). @default keelson-gateway-cache */
  applicationName?: string;
}

/** Where a fill started: stored only if nothing that could change its answer happened since. */
export interface FillTicket {
  readonly subgraph: string;
  readonly generation: number;
  readonly epoch: number;
}

/** Why entries were dropped (`keelson_gateway_cache_invalidations_total{cause}`). */
export type InvalidationCause = 'event' | 'mutation' | 'listener' | 'reload';

interface CacheMetrics {
  hits: Counter<'subgraph'>;
  misses: Counter<'subgraph'>;
  invalidations: Counter<'subgraph' | 'cause'>;
  entries: Gauge;
}

const entrySources = new Set<() => number>();

/** The cache's series in the process registry, created once per process (tests start several gateways). */
function cacheMetrics(registry: Registry): CacheMetrics {
  const existing = <T>(name: string) => registry.getSingleMetric(name) as T | undefined;
  return {
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
          for (const source of entrySources) n += source();
          this.set(n);
        },
      }),
  };
}

/** The part of the key that says who asked: two callers never share an answer, whatever their scopes. */
export function callerCacheKey(caller: Caller): string {
  return `${caller.kind}\u0000${caller.subject}\u0000${caller.tokenId ?? ''}\u0000${[...caller.scopes].sort().join(',')}`;
}

/**
 * The gateway's cache of subgraph answers, dropped by the event log. Entries are keyed by subgraph,
 * operation text, variables and caller; only fetches `classifyFetch` calls cacheable are kept.
 *
 * Exactness: an event on a stream drops the entries of the subgraphs it feeds as its NOTIFY arrives
 * (the commit is visible before it is notified), and a fill is stored only if no drop of its
 * subgraph happened between the fetch's start and its end (a generation per subgraph). While the
 * LISTEN connection is down nothing is served or stored; losing it and getting it back drop
 * everything. A mutation through this gateway drops what it may have changed when it answers, so a
 * caller reads its own writes; one not known to be evented also stops serving while in flight.
 */
export class EntityCache {
  /** Answers by subgraph, then key: a subgraph's entries drop at once. */
  private readonly entries = new Map<string, Map<string, string>>();
  private readonly generations = new Map<string, number>();
  private readonly kinds = new Map<string, FetchKind>();
  private readonly heads = new Map<string, number>();
  private readonly schemas = new Map<string, GraphQLSchema>();
  private readonly metrics: CacheMetrics;
  private readonly maxEntries: number;
  private readonly maxEntryBytes: number;
  private readonly countEntries = () => this.size;
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
    this.notifier = new EventNotifier({
      url: opts.databaseUrl,
      log: opts.log,
      applicationName: opts.applicationName ?? 'keelson-gateway-cache',
      ...(opts.reconnectDelayMs !== undefined ? { reconnectDelayMs: opts.reconnectDelayMs } : {}),
    });
    this.notifier.watch({
      event: (stream, seq) => {
        for (const subgraph of subgraphsOfStream(stream)) this.drop(subgraph, 'event');
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
    const json = this.up && this.unevented === 0 ? this.entries.get(subgraph)?.get(key) : undefined;
    if (json !== undefined) this.metrics.hits.inc({ subgraph });
    else this.metrics.misses.inc({ subgraph });
    return json;
  }

  /**
   * Where `subgraph` stands: it changes with every drop of its entries (and with LISTEN's epoch). The
   * data source's in-flight sharing keys on it, so a fetch sent after a change never joins one sent
   * before it (whose answer may predate the change, and would otherwise be stored as current).
   */
  position(subgraph: string): string {
    return `${this.generations.get(subgraph) ?? 0}.${this.epoch}`;
  }

  /** Taken before a cacheable fetch is sent. */
  ticket(subgraph: string): FillTicket {
    return { subgraph, generation: this.generations.get(subgraph) ?? 0, epoch: this.up ? this.epoch : -1 };
  }

  /** Keeps `json` under `key` unless something may have changed the answer since `ticket`. */
  fill(ticket: FillTicket, key: string, json: string): void {
    if (!this.up || this.stopped || ticket.epoch !== this.epoch || (this.generations.get(ticket.subgraph) ?? 0) !== ticket.generation) return;
    if (json.length > this.maxEntryBytes) return;
    let held = this.entries.get(ticket.subgraph);
    if (!held) this.entries.set(ticket.subgraph, (held = new Map()));
    held.set(key, json);
    if (held.size > this.maxEntries) held.delete(held.keys().next().value!);
  }

  /**
   * Called as a mutation is sent to `subgraph`; the returned function when it answered (or failed).
   * Then the entries it may have changed are dropped: its subgraph's when it is evented, all otherwise.
   */
  mutationStarted(subgraph: string, evented: boolean): () => void {
    if (!evented) this.unevented += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (evented) this.drop(subgraph, 'mutation');
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

  private drop(subgraph: string, cause: InvalidationCause): void {
    this.generations.set(subgraph, (this.generations.get(subgraph) ?? 0) + 1);
    this.entries.delete(subgraph);
    this.metrics.invalidations.inc({ subgraph, cause });
  }

  private dropAll(cause: InvalidationCause): void {
    for (const subgraph of Object.keys(CACHEABLE)) this.drop(subgraph, cause);
  }
}
