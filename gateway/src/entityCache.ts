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

/** One subgraph operation's entries (per variables and caller), and the fields it selects. */
interface Group {
  readonly fields: ReadonlySet<string>;
  readonly keys: Set<string>;
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
    let held = this.entries.get(subgraph);
    if (!held) this.entries.set(subgraph, (held = new Map()));
    let groups = this.groups.get(subgraph);
    if (!groups) this.groups.set(subgraph, (groups = new Map()));
    let group = groups.get(query);
    if (!group) groups.set(query, (group = { fields: ticket.fields, keys: new Set() }));
    held.delete(key);
    held.set(key, { json, query });
    group.keys.add(key);
    if (held.size > this.maxEntries) this.evict(subgraph, held.keys().next().value!);
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

  private evict(subgraph: string, key: string): void {
    const entry = this.entries.get(subgraph)?.get(key);
    if (!entry) return;
    this.entries.get(subgraph)!.delete(key);
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
      this.metrics.invalidations.inc({ subgraph, cause });
      return;
    }
    if (changed.length === 0) return;
    for (const field of changed) {
      const id = `${subgraph}\u0000${field}`;
      this.fieldGenerations.set(id, (this.fieldGenerations.get(id) ?? 0) + 1);
    }
    const groups = this.groups.get(subgraph);
    const held = this.entries.get(subgraph);
    if (groups && held) {
      for (const [query, group] of groups) {
        if (!changed.some((field) => group.fields.has(field))) continue;
        for (const key of group.keys) held.delete(key);
        groups.delete(query);
      }
    }
    this.metrics.invalidations.inc({ subgraph, cause });
  }

  private dropAll(cause: InvalidationCause): void {
    for (const subgraph of Object.keys(CACHEABLE)) this.drop(subgraph, cause);
  }
}
