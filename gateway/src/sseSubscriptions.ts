import type { IncomingMessage, ServerResponse } from 'node:http';
import { getOperationAST, Kind, parse, type DocumentNode, type FormattedExecutionResult } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';

/**
 * Subscriptions over HTTP at the GraphQL URL: Server-Sent Events in the `graphql-sse` protocol's
 * distinct connections mode (a POST, or a GET with `query`/`variables` in the URL, carrying
 * `accept: text/event-stream`; each result an `event: next`, the end `event: complete`), or Apollo's
 * multipart subscriptions (`accept: multipart/mixed;subscriptionSpec=1.0`).
 *
 * The stream is the very subscription a WebSocket client would get: it is opened over the gateway's
 * own WebSocket endpoint with the request's own `authorization`, so authentication, scopes, limits,
 * the per-credential socket cap, revocation (the socket closes 4401: the stream ends with an
 * `UNAUTHENTICATED` error) and the subscription router are the same. A result whose root field
 * carries a `cursor` is sent with that cursor as the event `id`; a request with `Last-Event-ID` and an
 * `$after` variable resumes after it, so a dropped stream reconnects with nothing lost or repeated.
 */

/** Whether a request asks for a streamed answer: graphql-sse's `text/event-stream`, or Apollo's multipart subscriptions. */
export function wantsEventStream(req: IncomingMessage): boolean {
  return String(req.headers.accept ?? '').toLowerCase().includes('text/event-stream') || wantsMultipart(req);
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
 * The subscription an event-stream request asks for: its parameters and parsed document. Otherwise
 * true once a 400 is answered (no query, bad JSON, a parse error, no single operation), or false when
 * the operation is no subscription (answered elsewhere).
 */
function subscriptionOf(req: IncomingMessage, res: ServerResponse, body: unknown): { params: Params; document: DocumentNode } | boolean {
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
  return { params, document };
}

/**
 * Serves one event-stream request (already authenticated and its body read and bounded by the
 * caller). Resolves when the stream has ended; returns false when the request is not a subscription
 * (the caller answers it as any other request).
 */
export async function serveEventStream(
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  opts: {
    wsUrl: string;
    keepAliveMs?: number;
    ca?: string | Buffer;
    /** For a request without `authorization` (an enrolled device): an assertion of its caller, which the gateway's own socket accepts from loopback. */
    assertCaller?: () => Promise<string>;
  },
): Promise<boolean> {
  const subscription = subscriptionOf(req, res, body);
  if (typeof subscription === 'boolean') return subscription;
  const { params, document } = subscription;

  const lastEventId = headerValue(req.headers['last-event-id']);
  const variables = { ...(params.variables ?? {}) };
  if (lastEventId && declaresAfter(document, params.operationName)) variables.after = lastEventId;

  const framing = wantsMultipart(req) ? MULTIPART : SSE;
  let connected!: () => void;
  let refused!: (event: unknown) => void;
  const ready = new Promise<void>((resolve, reject) => {
    connected = resolve;
    refused = reject;
  });
  const client = createClient({
    url: opts.wsUrl,
    webSocketImpl: opts.ca ? trusting(opts.ca) : WebSocket,
    lazy: true,
    retryAttempts: 0,
    connectionParams: async () =>
      req.headers.authorization ? { authorization: req.headers.authorization } : opts.assertCaller ? { assertion: await opts.assertCaller() } : {},
    on: { connected: () => connected(), closed: (event) => refused(event) },
  });
  const results = client.iterate<Record<string, unknown>>({ query: params.query, variables, ...(params.operationName ? { operationName: params.operationName } : {}) });
  // Refused before the stream opens (a credential revoked since, the per-credential cap): an HTTP
  // status, as a plain request would get, and nothing streamed.
  try {
    await ready;
  } catch (event) {
    const code = (event as { code?: number }).code;
    const reason = (event as { reason?: string }).reason || 'the subscription could not open';
    await client.dispose();
    if (code === 4429) sseError(res, 429, 'BAD_REQUEST', reason);
    else if (code === 4401) sseError(res, 401, 'UNAUTHENTICATED', reason);
    else sseError(res, 503, 'SERVICE_UNAVAILABLE', reason);
    return true;
  }

  res.writeHead(200, { 'content-type': framing.contentType, 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.flushHeaders();
  const write = (chunk: string) => res.writable && res.write(chunk);
  // A beat now and then keeps proxies (and Apollo's clients) from timing the stream out.
  const keepAlive = setInterval(() => write(framing.heartbeat), opts.keepAliveMs ?? framing.heartbeatMs);
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
      write(framing.next(result, cursorOf(result)));
    }
  } catch (err) {
    // The upstream socket closed (a revoked or expired credential: 4401) or the operation was refused.
    const e = err as { code?: number; reason?: string; message?: string } | readonly { message: string; extensions?: Record<string, unknown> }[];
    const errors = Array.isArray(e)
      ? e
      : [{ message: (e as { reason?: string }).reason || (e as Error).message || 'the subscription ended', extensions: { code: closeCodeName((e as { code?: number }).code) } }];
    write(framing.error(errors));
  } finally {
    clearInterval(keepAlive);
    write(framing.end);
    res.end();
    await client.dispose();
  }
  return true;
}

/** How results travel on one HTTP response. */
interface Framing {
  contentType: string;
  next(result: unknown, id: string | undefined): string;
  /** Errors that end the stream (not those of a result). */
  error(errors: readonly unknown[]): string;
  heartbeat: string;
  heartbeatMs: number;
  end: string;
}

/** graphql-sse's events. */
const SSE: Framing = {
  contentType: 'text/event-stream; charset=utf-8',
  next: (result, id) => `${id ? `id: ${id}\n` : ''}event: next\ndata: ${JSON.stringify(result)}\n\n`,
  error: (errors) => `event: next\ndata: ${JSON.stringify({ errors })}\n\n`,
  heartbeat: ':\n\n',
  heartbeatMs: 15_000,
  end: 'event: complete\ndata:\n\n',
};

/**
 * Apollo's multipart HTTP subscriptions (`multipart/mixed;subscriptionSpec=1.0`): each result a part
 * `{"payload": <result>}`, an empty `{}` part as a heartbeat every 5 s, transport errors as
 * `{"payload": null, "errors": [...]}`, and the closing boundary at the end.
 */
const PART = '\r\n---\r\ncontent-type: application/json; charset=utf-8\r\n\r\n';
const MULTIPART: Framing = {
  contentType: 'multipart/mixed; boundary="-"; subscriptionSpec=1.0',
  next: (result) => `${PART}${JSON.stringify({ payload: result })}`,
  error: (errors) => `${PART}${JSON.stringify({ payload: null, errors })}`,
  heartbeat: `${PART}{}`,
  heartbeatMs: 5_000,
  end: '\r\n-----\r\n',
};

/** Whether a request asks for Apollo's multipart subscription response. */
export function wantsMultipart(req: IncomingMessage): boolean {
  const accept = String(req.headers.accept ?? '').toLowerCase();
  return accept.includes('multipart/mixed') && /subscriptionspec="?1\.0/.test(accept);
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

/**
 * A WebSocket that trusts exactly the gateway's own certificate (the stream's connection to itself
 * over wss on loopback, where the name in the certificate is not the address dialled).
 */
function trusting(ca: string | Buffer): typeof WebSocket {
  return class extends WebSocket {
    constructor(url: string | URL, protocols?: string | string[]) {
      // Node's tls takes `undefined` as "the name is fine" (ws types it as a boolean).
      super(url, protocols, { ca, checkServerIdentity: (() => undefined) as unknown as () => boolean });
    }
  } as typeof WebSocket;
}
