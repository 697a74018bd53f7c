import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, Kind, parse, type DocumentNode, type FormattedExecutionResult } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/**
 * Subscriptions over Server-Sent Events at the GraphQL URL: the `graphql-sse` protocol's distinct
 * connections mode (a POST, or a GET with `query`/`variables` in the URL, carrying
 * `accept: text/event-stream`; each result an `event: next`, the end `event: complete`).
 *
 * The stream is the very subscription a WebSocket client would get: it is opened over the gateway's
 * own WebSocket endpoint with the request's own `authorization`, so authentication, scopes, limits,
 * the per-credential socket cap, revocation (the socket closes 4401: the stream ends with an
 * `UNAUTHENTICATED` error) and the subscription router are the same. A result whose root field
 * carries a `cursor` is sent with that cursor as the event `id`; a request with `Last-Event-ID` and an
 * `$after` variable resumes after it, so a dropped stream reconnects with nothing lost or repeated.
 */

/** Whether a request asks for an event stream (graphql-sse sends `accept: text/event-stream`). */
export function wantsEventStream(req: IncomingMessage): boolean {
  return String(req.headers.accept ?? '').toLowerCase().includes('text/event-stream');
}

interface Params {
  query: string;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
  extensions?: Record<string, unknown> | null;
}

/** The GraphQL parameters of a POST body (parsed JSON) or a GET's search parameters. */
function paramsOf(req: IncomingMessage, body: unknown): Params | string {
  if (req.method === 'GET') {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const query = url.searchParams.get('query');
    if (!query) return 'a GET event stream needs the query parameter `query`';
    let variables: Record<string, unknown> | undefined;
    try {
      const raw = url.searchParams.get('variables');
      variables = raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined;
    } catch {
      return 'the `variables` parameter is not valid JSON';
    }
    return { query, ...(variables ? { variables } : {}), operationName: url.searchParams.get('operationName') };
  }
  if (typeof body !== 'object' || body === null || typeof (body as Params).query !== 'string') return 'the body must be a JSON object with a `query` string';
  return body as Params;
}

const sseError = (res: ServerResponse, status: number, code: string, message: string): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ errors: [{ message, extensions: { code, status } }] }));
};

/** The `cursor` of a result's root field, when it has one (the resumable streams all do). */
function cursorOf(result: Pick<FormattedExecutionResult, 'data'>): string | undefined {
  const data = result.data as Record<string, unknown> | null | undefined;
  if (!data) return undefined;
  for (const value of Object.values(data)) {
    const cursor = (value as { cursor?: unknown } | null)?.cursor;
    if (typeof cursor === 'string' && /^[\x21-\x7e]{1,200}$/.test(cursor)) return cursor;
  }
  return undefined;
}

const declaresAfter = (document: DocumentNode, operationName?: string | null): boolean =>
  getOperationAST(document, operationName ?? undefined)?.variableDefinitions?.some((v) => v.variable.name.value === 'after') ?? false;

/**
 * Serves one event-stream request (already authenticated and its body read and bounded by the
 * caller). Resolves when the stream has ended; returns false when the request is not a subscription
 * (the caller answers it as any other request).
 */
export async function serveEventStream(req: IncomingMessage, res: ServerResponse, body: unknown, opts: { wsUrl: string; keepAliveMs?: number }): Promise<boolean> {
  const params = paramsOf(req, body);
  if (typeof params === 'string') {
    sseError(res, 400, 'BAD_REQUEST', params);
    return true;
  }
  let document: DocumentNode;
  try {
    document = parse(params.query);
  } catch (err) {
    sseError(res, 400, 'GRAPHQL_PARSE_FAILED', (err as Error).message);
    return true;
  }
  const operation = getOperationAST(document, params.operationName ?? undefined);
  if (!operation || operation.kind !== Kind.OPERATION_DEFINITION) {
    sseError(res, 400, 'BAD_REQUEST', 'the document names no single operation to run (set operationName)');
    return true;
  }
  if (operation.operation !== 'subscription') return false;

  const lastEventId = headerValue(req.headers['last-event-id']);
  const variables = { ...(params.variables ?? {}) };
  if (lastEventId && declaresAfter(document, params.operationName)) variables.after = lastEventId;

  const client = createClient({
    url: opts.wsUrl,
    webSocketImpl: WebSocket,
    lazy: true,
    retryAttempts: 0,
    connectionParams: () => ({ ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}) }),
  });
  const results = client.iterate<Record<string, unknown>>({ query: params.query, variables, ...(params.operationName ? { operationName: params.operationName } : {}) });

  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const write = (chunk: string) => res.writable && res.write(chunk);
  // A comment now and then keeps proxies from timing the stream out.
  const keepAlive = setInterval(() => write(':\n\n'), opts.keepAliveMs ?? 15_000);
  keepAlive.unref();
  const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
  let clientGone = false;
  void closed.then(() => {
    clientGone = true;
    void results.return?.();
  });
  try {
    for await (const result of results) {
      if (clientGone) break;
      const id = cursorOf(result);
      write(`${id ? `id: ${id}\n` : ''}event: next\ndata: ${JSON.stringify(result)}\n\n`);
    }
  } catch (err) {
    // The upstream socket closed (a revoked or expired credential: 4401; the cap: 4429) or refused.
    const e = err as { code?: number; reason?: string; message?: string } | readonly { message: string; extensions?: Record<string, unknown> }[];
    const errors = Array.isArray(e)
      ? e
      : [{ message: (e as { reason?: string }).reason || (e as Error).message || 'the subscription ended', extensions: { code: closeCodeName((e as { code?: number }).code) } }];
    write(`event: next\ndata: ${JSON.stringify({ errors })}\n\n`);
  } finally {
    clearInterval(keepAlive);
    write('event: complete\ndata:\n\n');
    res.end();
    await client.dispose();
  }
  return true;
}

function closeCodeName(code: number | undefined): string {
  if (code === 4401) return 'UNAUTHENTICATED';
  if (code === 4429) return 'TOO_MANY_CONNECTIONS';
  if (code === 4403) return 'FORBIDDEN';
  return 'SUBSCRIPTION_ENDED';
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
