import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ApolloServerPlugin, BaseContext } from '@apollo/server';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { inService, serviceTracer, tracingActive } from './tracing';

/** Probes and scrapes are not traced (they would drown the requests). */
const UNTRACED = new Set(['/health', '/metrics']);

/**
 * Runs one HTTP request of `service` inside a SERVER span, continuing the caller's trace when the
 * request carries `traceparent` (the gateway's subgraph fetches, mesh services calling each other).
 * A no-op while tracing is off.
 */
export async function serverSpan(service: string, req: IncomingMessage, res: ServerResponse, handle: () => Promise<void>): Promise<void> {
  if (!tracingActive()) return handle();
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  if (UNTRACED.has(path)) return handle();
  const parent = propagation.extract(context.active(), req.headers);
  return inService(
    service,
    () =>
      serviceTracer(service, '@keelson/service').startActiveSpan(
        `${req.method ?? 'GET'} ${path}`,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method ?? 'GET', 'url.path': path } },
        context.active(),
        async (span) => {
          try {
            await handle();
          } catch (err) {
            span.recordException(err as Error);
            throw err;
          } finally {
            span.setAttribute('http.response.status_code', res.statusCode);
            if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
            span.end();
          }
        },
      ),
    parent,
  );
}

/** Names the request's span after its GraphQL operation (`mutation startWorkflow`) and marks errors. */
export function tracingPlugin<TContext extends BaseContext>(): ApolloServerPlugin<TContext> {
  return {
    async requestDidStart() {
      if (!tracingActive()) return;
      const span = trace.getActiveSpan();
      if (!span || !span.isRecording()) return;
      return {
        async didResolveOperation(ctx) {
          const type = ctx.operation?.operation ?? 'unknown';
          const name = ctx.operationName ?? '';
          span.updateName(name ? `${type} ${name}` : type);
          span.setAttribute('graphql.operation.type', type);
          if (name) span.setAttribute('graphql.operation.name', name);
        },
        async didEncounterErrors(ctx) {
          const codes = ctx.errors.map((e) => String(e.extensions?.code ?? 'INTERNAL'));
          span.setAttribute('graphql.error.codes', codes);
          if (codes.some((c) => c === 'INTERNAL' || c === 'INTERNAL_SERVER_ERROR')) span.setStatus({ code: SpanStatusCode.ERROR });
        },
      };
    },
  };
}
