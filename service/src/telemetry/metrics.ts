import { GCProfiler, getHeapStatistics } from 'node:v8';
import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { getOperationAST, type DocumentNode } from 'graphql';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Logger } from '../logger';
import type { RouteHandler } from '../serveGraphQL';

/**
 * The process's Prometheus registry: one per process, whatever services it hosts (`npm start` hosts
 * them all), each series labelled with its `service`. Every service serves it at `GET /metrics`, so
 * scrape one service per process.
 */
interface MeshMetrics {
  registry: Registry;
  requests: Counter<'service' | 'operation' | 'type' | 'outcome' | 'code'>;
  refusals: Counter<'service' | 'reason'>;
  duration: Histogram<'service' | 'operation' | 'type'>;
  subscriptions: Gauge<'service' | 'operation'>;
  compiledAnswers: Counter<'service' | 'by'>;
  lagSources: Set<() => LagSample[]>;
  approvalSources: Set<() => Promise<ApprovalSample[]>>;
  operations: Map<string, Set<string>>;
}

/** Approval gates open now, of one kind (run gate, harness tool, policy ask, …), and the oldest one's age. */
export interface ApprovalSample {
  kind: string;
  open: number;
  oldestSeconds: number;
}

/** One consumer of an event stream and how far behind the stream's head it is. */
export interface LagSample {
  stream: string;
  consumer: string;
  /** Events committed past the consumer's cursor, as far as this process knows. */
  lag: number;
}

/** Distinct operation names kept per service; later ones count as `other` (clients choose names). */
const MAX_OPERATIONS = 200;

let metrics: MeshMetrics | undefined;

/** The operation series every service reports into `registry`: requests, refusals, latency and open subscriptions. */
function operationSeries(registry: Registry): Pick<MeshMetrics, 'requests' | 'refusals' | 'duration' | 'subscriptions' | 'compiledAnswers'> {
  return {
    requests: new Counter({
      name: 'keelson_graphql_requests_total',
      help: 'GraphQL operations served, per service, operation name, type, outcome (ok or error) and the first error code (none when ok)',
      labelNames: ['service', 'operation', 'type', 'outcome', 'code'],
      registers: [registry],
    }),
    refusals: new Counter({
      name: 'keelson_refusals_total',
      help: 'Requests, upgrades and operations refused before they ran, per service and reason (unauthenticated, scope, host, origin, body_limit, connections, …)',
      labelNames: ['service', 'reason'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: 'keelson_graphql_request_duration_seconds',
      help: 'Latency of GraphQL operations over HTTP, per service, operation name and type',
      labelNames: ['service', 'operation', 'type'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    }),
    subscriptions: new Gauge({
      name: 'keelson_graphql_subscriptions_open',
      help: 'Subscriptions open now, per service and operation name',
      labelNames: ['service', 'operation'],
      registers: [registry],
    }),
    compiledAnswers: new Counter({
      name: 'keelson_compiled_executor_answers_total',
      help: 'HTTP operations a subgraph\'s compiled executor answered, per service and by which engine: graphql-jit, or graphql-js (mutations, what does not compile, answers it redoes)',
      labelNames: ['service', 'by'],
      registers: [registry],
    }),
  };
}

/**
 * The approval gauges in `registry`, read at each scrape from the process that owns the approval
 * inbox (the runs domain): gates open per kind, and the oldest one's wait.
 */
function approvalGauges(registry: Registry, approvalSources: Set<() => Promise<ApprovalSample[]>>): void {
  const approvalsByKind = async (): Promise<Map<string, ApprovalSample>> => {
    const merged = new Map<string, ApprovalSample>();
    for (const source of approvalSources) {
      const samples = await source().catch(() => [] as ApprovalSample[]);
      for (const s of samples) {
        const seen = merged.get(s.kind);
        merged.set(s.kind, seen ? { kind: s.kind, open: seen.open + s.open, oldestSeconds: Math.max(seen.oldestSeconds, s.oldestSeconds) } : s);
      }
    }
    return merged;
  };
  new Gauge({
    name: 'keelson_approvals_open',
    help: 'Approval gates waiting for an answer now, per kind',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of (await approvalsByKind()).values()) this.set({ kind: s.kind }, s.open);
    },
  });
  new Gauge({
    name: 'keelson_approvals_oldest_open_seconds',
    help: 'How long the oldest open approval gate of each kind has waited',
    labelNames: ['kind'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of (await approvalsByKind()).values()) this.set({ kind: s.kind }, s.oldestSeconds);
    },
  });
}

/** The event-log lag gauge in `registry`: per stream and consumer, the worst lag its sources report at a scrape. */
function lagGauge(registry: Registry, lagSources: Set<() => LagSample[]>): void {
  new Gauge({
    name: 'keelson_event_log_lag_events',
    help: 'Events committed to a stream past a consumer\'s cursor (the largest among that consumer\'s open tails)',
    labelNames: ['stream', 'consumer'],
    registers: [registry],
    collect() {
      this.reset();
      const worst = new Map<string, LagSample>();
      for (const source of lagSources) {
        for (const sample of source()) {
          const key = `${sample.stream}\u0000${sample.consumer}`;
          const seen = worst.get(key);
          if (!seen || sample.lag > seen.lag) worst.set(key, sample);
        }
      }
      for (const s of worst.values()) this.set({ stream: s.stream, consumer: s.consumer }, s.lag);
    },
  });
}

/** How often the live heap's GC record is read and restarted (what a GC profile holds meanwhile). */
const LIVE_HEAP_EVERY_MS = 5_000;

/**
 * `keelson_heap_live_bytes`: the V8 heap in use just after the process's last full (mark-compact)
 * garbage collection — what it holds live, without the garbage a raw heap sample mostly counts. From
 * V8's own GC profile (each collection's heap before and after it), read every few seconds and at
 * each scrape; 0 until a full collection has run.
 */
function liveHeapGauge(registry: Registry): void {
  const profiler = new GCProfiler();
  let live: number | undefined;
  const read = () => {
    for (const gc of profiler.stop()?.statistics ?? []) {
      if (gc.gcType === 'MarkSweepCompact') live = gc.afterGC.heapStatistics.usedHeapSize;
    }
    profiler.start();
  };
  profiler.start();
  setInterval(read, LIVE_HEAP_EVERY_MS).unref();
  new Gauge({
    name: 'keelson_heap_live_bytes',
    help: 'V8 heap in use just after the last full (mark-compact) garbage collection: what the process holds live (0 until one has run)',
    registers: [registry],
    collect() {
      read();
      if (live !== undefined) this.set(live);
    },
  });
}

/**
 * `keelson_heap_resident_bytes`: the V8 heap's pages resident in memory (`total_physical_size`), so
 * that RSS less it is what the process holds outside V8's heap. The committed heap
 * (`nodejs_heap_size_total_bytes`) is no substitute: V8 commits young-generation space before it
 * touches it, so it runs ahead of what is resident.
 */
function residentHeapGauge(registry: Registry): void {
  new Gauge({
    name: 'keelson_heap_resident_bytes',
    help: 'V8 heap pages resident in memory (v8 total_physical_size): RSS less this is what the process holds outside the V8 heap',
    registers: [registry],
    collect() {
      this.set(getHeapStatistics().total_physical_size);
    },
  });
}

function meshMetrics(): MeshMetrics {
  if (metrics) return metrics;
  const registry = new Registry();
  // The Node runtime and process series under their standard names (what stock dashboards read)…
  collectDefaultMetrics({ register: registry });
  // …less three gauges prom-client also exports under a counter's `_total` suffix (promtool flags
  // them): their values stay in `nodejs_active_handles`, `_requests` and `_resources` (by type).
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
  const lagSources = new Set<() => LagSample[]>();
  const approvalSources = new Set<() => Promise<ApprovalSample[]>>();
  metrics = { registry, ...operationSeries(registry), lagSources, approvalSources, operations: new Map() };
  approvalGauges(registry, approvalSources);
  lagGauge(registry, lagSources);
  liveHeapGauge(registry);
  residentHeapGauge(registry);
  return metrics;
}

/** Why something was refused before it ran (`keelson_refusals_total{reason}`). */
export type RefusalReason =
  | 'unauthenticated'
  | 'credential'
  | 'scope'
  | 'host'
  | 'origin'
  | 'body_limit'
  | 'body_unreadable'
  | 'bad_json'
  | 'encoding'
  | 'not_found'
  | 'connections'
  | 'subscriptions';

/** Counts one refusal of `service`. */
export function countRefusal(service: string, reason: RefusalReason): void {
  meshMetrics().refusals.inc({ service, reason });
}

/** Which engine answered one operation the compiled executor of `service` was handed. */
export type CompiledAnswerEngine = 'graphql-jit' | 'graphql-js';

/** Counts one operation the compiled executor of `service` answered, and by which engine. */
export function countCompiledAnswer(service: string, by: CompiledAnswerEngine): void {
  meshMetrics().compiledAnswers.inc({ service, by });
}

/** The process registry (tests, and exporters other than the `/metrics` route). */
export function metricsRegistry(): Registry {
  return meshMetrics().registry;
}

/** An error code as a label: the mesh's and GraphQL's codes are a closed set of upper-case names; anything else is `OTHER`. */
function errorCodeLabel(code: unknown): string {
  return typeof code === 'string' && /^[A-Z][A-Z_]{1,40}$/.test(code) ? code : 'OTHER';
}

/** A bounded operation label: the client's operation name, `anonymous`, or `other` past the cap. */
export function operationLabel(service: string, name: string | null | undefined): string {
  if (!name) return 'anonymous';
  const m = meshMetrics();
  let names = m.operations.get(service);
  if (!names) m.operations.set(service, (names = new Set()));
  if (names.has(name)) return name;
  if (names.size >= MAX_OPERATIONS) return 'other';
  names.add(name);
  return name;
}

/**
 * Counts and times every HTTP GraphQL operation of `service`, and logs it at debug level (with the
 * trace id while tracing is on).
 */
export function metricsPlugin<TContext extends BaseContext>(service: string, log?: Logger): ApolloServerPlugin<TContext> {
  const m = meshMetrics();
  return {
    async requestDidStart() {
      const started = process.hrtime.bigint();
      return {
        async willSendResponse(ctx) {
          const operation = operationLabel(service, ctx.operationName ?? ctx.request.operationName);
          const type = ctx.operation?.operation ?? 'unknown';
          const seconds = Number(process.hrtime.bigint() - started) / 1e9;
          const errors = ctx.response.body.kind === 'single' ? ctx.response.body.singleResult.errors : undefined;
          const failed = (errors?.length ?? 0) > 0;
          const code = failed ? errorCodeLabel(errors![0]!.extensions?.code) : 'none';
          m.requests.inc({ service, operation, type, outcome: failed ? 'error' : 'ok', code });
          if (code === 'FORBIDDEN' && errors![0]!.extensions?.requiredScopes) m.refusals.inc({ service, reason: 'scope' });
          m.duration.observe({ service, operation, type }, seconds);
          log?.debug({ operation, type, outcome: failed ? 'error' : 'ok', ms: Math.round(seconds * 1000) }, 'graphql operation');
        },
      };
    },
  };
}

/** Marks one subscription of `service` open; call the returned function once when it ends. */
export function subscriptionOpened(service: string, operationName: string | null | undefined): () => void {
  const m = meshMetrics();
  const labels = { service, operation: operationLabel(service, operationName) };
  m.subscriptions.inc(labels);
  m.requests.inc({ ...labels, type: 'subscription', outcome: 'ok', code: 'none' });
  let open = true;
  return () => {
    if (!open) return;
    open = false;
    m.subscriptions.dec(labels);
  };
}

/**
 * Open-subscription bookkeeping for a graphql-ws server of `service`: `opened` from `onOperation`
 * (counts only a stream that started), `closed` from `onComplete` (graphql-ws calls it when the
 * client completes, the stream ends or fails, and when the socket closes).
 */
export function subscriptionGauge(service: string): {
  opened(socketCtx: object, id: string, args: { document: DocumentNode; operationName?: string | null | undefined }, result: unknown): void;
  closed(socketCtx: object, id: string): void;
} {
  const open = new WeakMap<object, Map<string, () => void>>();
  return {
    opened(socketCtx, id, args, result) {
      if (!result || typeof (result as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function') return;
      const operationName = args.operationName ?? getOperationAST(args.document, undefined)?.name?.value;
      let ids = open.get(socketCtx);
      if (!ids) open.set(socketCtx, (ids = new Map()));
      ids.get(id)?.();
      ids.set(id, subscriptionOpened(service, operationName));
    },
    closed(socketCtx, id) {
      const ids = open.get(socketCtx);
      ids?.get(id)?.();
      ids?.delete(id);
    },
  };
}

/** Adds a source of event-log lag samples (read at each scrape); returns its removal. */
export function registerLagSource(source: () => LagSample[]): () => void {
  const m = meshMetrics();
  m.lagSources.add(source);
  return () => m.lagSources.delete(source);
}

/** `GET /metrics`: the process registry in Prometheus' text format. */
export function metricsRoute(): RouteHandler {
  return async (_req, res) => {
    const { registry } = meshMetrics();
    try {
      const body = await registry.metrics();
      res.setHeader('content-type', registry.contentType);
      res.end(body);
    } catch (err) {
      res.statusCode = 500;
      res.end(`metrics failed: ${(err as Error).message}`);
    }
  };
}

/** Adds a source of open-approval samples (read at each scrape); returns its removal. */
export function registerApprovalSource(source: () => Promise<ApprovalSample[]>): () => void {
  const m = meshMetrics();
  m.approvalSources.add(source);
  return () => m.approvalSources.delete(source);
}
