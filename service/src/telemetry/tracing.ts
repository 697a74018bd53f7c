import { context, createContextKey, propagation, trace, type Context, type Span, type SpanOptions, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';

/**
 * Where spans go, read from the standard OpenTelemetry variables: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * (the full URL), else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces` (OTLP over HTTP, protobuf-free
 * JSON). Neither set: tracing is off.
 */
export type TracingSettings = { enabled: true; tracesUrl: string } | { enabled: false; reason: string };

export function tracingFromEnv(env: Record<string, string | undefined>): TracingSettings {
  const value = (key: string) => env[key]?.trim() || undefined;
  const full = value('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const base = value('OTEL_EXPORTER_OTLP_ENDPOINT');
  const tracesUrl = full ?? (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (!tracesUrl) return { enabled: false, reason: 'neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set' };
  try {
    const url = new URL(tracesUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http(s) URL, got "${tracesUrl}"`);
  }
  return { enabled: true, tracesUrl };
}

/** The service name spans carry in the backend: `keelson-<service>`. */
export function serviceName(service: string): string {
  return service.startsWith('keelson-') ? service : `keelson-${service}`;
}

const SERVICE_KEY = createContextKey('keelson.service');

interface ActiveTracing {
  settings: Extract<TracingSettings, { enabled: true }>;
  processor: SpanProcessor;
  providers: Map<string, BasicTracerProvider>;
  contextManager: AsyncLocalStorageContextManager;
  users: number;
}

/** Process-wide: one exporter and batch processor, one provider (a `service.name`) per mesh service. */
let active: ActiveTracing | undefined;

function providerFor(service: string): TracerProvider {
  if (!active) return trace.getTracerProvider();
  const name = serviceName(service);
  let provider = active.providers.get(name);
  if (!provider) {
    provider = new BasicTracerProvider({ resource: new Resource({ 'service.name': name, 'service.namespace': 'keelson-mesh' }), spanProcessors: [active.processor] });
    active.providers.set(name, provider);
  }
  return provider;
}

/**
 * A tracer whose spans belong to the mesh service current in the context they start in (see
 * {@link inService}), else to `fallback`. Registered as the global provider, so libraries that trace
 * through the OpenTelemetry API (Apollo Gateway, Temporal's interceptors) land in the service that
 * called them, even when several services share one process (`npm start`).
 */
class RoutingTracer implements Tracer {
  constructor(
    private readonly name: string,
    private readonly version: string | undefined,
    private readonly fallback: string,
    /** Always `fallback`, whatever the context says. */
    private readonly pinned = false,
  ) {}

  private serviceOf(ctx: Context): string {
    return this.pinned ? this.fallback : ((ctx.getValue(SERVICE_KEY) as string | undefined) ?? this.fallback);
  }

  private target(ctx: Context): Tracer {
    return providerFor(this.serviceOf(ctx)).getTracer(this.name, this.version);
  }

  startSpan(name: string, options?: SpanOptions, ctx: Context = context.active()): Span {
    return this.target(ctx).startSpan(name, options, ctx);
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, ...rest: [F] | [SpanOptions, F] | [SpanOptions, Context, F]): ReturnType<F> {
    const fn = rest[rest.length - 1] as F;
    const options = rest.length > 1 ? (rest[0] as SpanOptions) : undefined;
    const parent = rest.length > 2 ? (rest[1] as Context) : context.active();
    const span = this.startSpan(name, options, parent);
    // What runs inside belongs to the same service (a pinned tracer's children included).
    return context.with(trace.setSpan(parent.setValue(SERVICE_KEY, this.serviceOf(parent)), span), fn as (s: Span) => ReturnType<F>, undefined, span);
  }
}

class RoutingTracerProvider implements TracerProvider {
  constructor(private readonly fallback: string) {}
  getTracer(name: string, version?: string): Tracer {
    return new RoutingTracer(name, version, this.fallback);
  }
}

export interface Tracing {
  settings: TracingSettings;
  /** Sends every ended span now (tests, before reading the backend). */
  flush(): Promise<void>;
  /** Flushes and, with the last user gone, unregisters everything. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Turns tracing on for this process when `settings` say so: W3C trace context, async-hooks context,
 * OTLP/HTTP export in batches. Spans with no mesh service in their context belong to `defaultService`.
 * Several callers in one process share the one setup; each stops its own handle.
 */
export function startTracing(settings: TracingSettings, defaultService = 'mesh'): Tracing {
  if (!settings.enabled) return { settings, flush: async () => {}, stop: async () => {} };
  if (!active) {
    const exporter = new OTLPTraceExporter({ url: settings.tracesUrl });
    const processor = new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1000 });
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(new RoutingTracerProvider(defaultService));
    active = { settings, processor, providers: new Map(), contextManager, users: 0 };
  }
  active.users += 1;
  const mine = active;
  let stopped: Promise<void> | undefined;
  return {
    settings: mine.settings,
    flush: () => mine.processor.forceFlush(),
    stop() {
      stopped ??= (async () => {
        mine.users -= 1;
        if (mine.users > 0) {
          await mine.processor.forceFlush();
          return;
        }
        if (active === mine) active = undefined;
        await mine.processor.shutdown();
        trace.disable();
        propagation.disable();
        context.disable();
      })();
      return stopped;
    },
  };
}

/** True while tracing is on in this process. */
export function tracingActive(): boolean {
  return active !== undefined;
}

/** Runs `fn` with `service` as the mesh service of every span started inside it. */
export function inService<T>(service: string, fn: () => T, ctx: Context = context.active()): T {
  return context.with(ctx.setValue(SERVICE_KEY, service), fn);
}

/** A tracer whose spans always belong to `service`. */
export function serviceTracer(service: string, scope = '@keelson/mesh'): Tracer {
  return new RoutingTracer(scope, undefined, service, true);
}

/** The span processor and resource of `service`, for exporters that take them (Temporal's workflow sink). */
export function spanProcessorFor(service: string): { processor: SpanProcessor; resource: Resource } | undefined {
  if (!active) return undefined;
  return { processor: active.processor, resource: new Resource({ 'service.name': serviceName(service), 'service.namespace': 'keelson-mesh' }) };
}

/** The W3C trace context of `ctx` as HTTP headers (`traceparent`, `tracestate`); empty when none. */
export function traceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/**
 * The W3C trace context of `ctx` as environment variables for a child process (`TRACEPARENT`,
 * `TRACESTATE` when set: the OpenTelemetry convention for environment carriers). Empty when no
 * span is current.
 */
export function traceparentEnv(ctx: Context = context.active()): Record<string, string> {
  const carrier = traceHeaders(ctx);
  const env: Record<string, string> = {};
  if (carrier.traceparent) env.TRACEPARENT = carrier.traceparent;
  if (carrier.tracestate) env.TRACESTATE = carrier.tracestate;
  return env;
}

/** Trace and span ids of the current span, for log lines; empty when none is recording. */
export function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const { traceId, spanId, traceFlags } = span.spanContext();
  if (!traceFlags && !span.isRecording()) return {};
  return { trace_id: traceId, span_id: spanId };
}

/**
 * Runs a child process of the mesh's (a bash node, a harness CLI) inside a span of its own; `fn`
 * gets the `TRACEPARENT` environment naming that span, for the process to continue the trace.
 * While tracing is off, `fn` runs as is with an empty environment.
 */
export async function processSpan<T>(name: string, attributes: Record<string, string | number | boolean>, fn: (env: Record<string, string>) => Promise<T>): Promise<T> {
  if (!active) return fn({});
  return trace.getTracer('@keelson/mesh').startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(traceparentEnv());
    } catch (err) {
      span.recordException(err as Error);
      throw err;
    } finally {
      span.end();
    }
  });
}
