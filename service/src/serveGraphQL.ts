import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { AddressInfo, Socket } from 'node:net';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Readable } from 'node:stream';
import { HeaderMap, type ApolloServer, type BaseContext } from '@apollo/server';
import { isMeshError, isUnavailableError, statusOf, UNAVAILABLE_MESSAGE, type Caller } from '@keelson/schema';
import { WebSocketServer } from 'ws';
import { corsOrigin, hostAllowed, originAllowed, type AccessPolicy } from './auth/accessPolicy';
import { runAsCaller } from './auth/callerContext';
import { assertBindAllowed } from './bindGuard';
import type { Logger } from './logger';
import { countRefusal, metricsPlugin, metricsRoute, type RefusalReason } from './telemetry/metrics';
import { serverSpan, tracingPlugin } from './telemetry/httpSpans';

/** The largest request body accepted, in bytes, after decompression. @default 1 MiB */
const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/**
 * A handler of every method at one path, authenticating on its own (e.g. `/mcp`). `body` reads the
 * request body, decompressed and bounded like a GraphQL request's; it rejects with an error whose
 * `status` says why (413, 415, 400).
 */
export type EndpointHandler = (req: IncomingMessage, res: ServerResponse, body: () => Promise<string>) => Promise<void>;

export interface ServeOptions<TContext extends BaseContext> {
  /** Service name for logs and errors. */
  name: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** `off` only on a loopback host (checked before anything binds). */
  auth: 'on' | 'off';
  /** Host and Origin allowlists, checked on every request and upgrade. */
  access: AccessPolicy;
  /**
   * Authenticates one GraphQL request over HTTP; throws a MeshError (UNAUTHENTICATED → 401) to
   * refuse it. Routes and WebSocket upgrades are not passed here: the WebSocket server
   * authenticates its `connection_init`.
   */
  authenticate: (req: IncomingMessage) => Promise<Caller>;
  /** Not yet started: serveGraphQL starts and stops it. */
  apollo: ApolloServer<TContext>;
  context: (req: IncomingMessage, caller: Caller) => Promise<TContext>;
  /** Attaches the subscription server; returns its dispose function. */
  websocket?: (wss: WebSocketServer) => () => Promise<void> | void;
  /**
   * Extra GET routes (exact path), e.g. a health probe or an explorer page; served without a
   * credential. `GET /metrics` (Prometheus) is always served, with authentication on to a caller
   * with the read scope only (see `metricsAuthenticate`).
   */
  routes?: Record<string, RouteHandler>;
  /** Handlers of any method at an exact path, after the Host/Origin checks and CORS; no credential checked here. */
  endpoints?: Record<string, EndpointHandler>;
  /**
   * Serve HTTPS and WSS with this certificate chain and key (PEM). With `clientCa`, client
   * certificates are asked for and checked against it, and `acceptConnection` decides per TLS
   * connection, before any request on it is read. @default plain HTTP and WS
   */
  tls?: { cert: string | Buffer; key: string | Buffer; clientCa?: string | Buffer; acceptConnection?: (socket: TLSSocket) => boolean };
  /** Who is reading `/metrics` (a scraper's bearer token). @default authenticate */
  metricsAuthenticate?: (req: IncomingMessage) => Promise<Caller>;
  /**
   * Serves an authenticated GraphQL request that asks for a streamed answer (`accept:
   * text/event-stream` or `multipart/mixed`; its body read and bounded); resolves true when it
   * answered, false to let Apollo Server answer it.
   */
  eventStream?: (req: IncomingMessage, res: ServerResponse, body: unknown, caller: Caller) => Promise<boolean>;
  /** @default /graphql */
  path?: string;
  /** @default 1 MiB */
  maxBodyBytes?: number;
  /**
   * Runs each request inside `runAsCaller`, so code it reaches finds the caller with `currentCaller`.
   * A process whose code takes the caller from the GraphQL context alone (the gateway) turns it off:
   * the async context it needs costs a hook on every promise of the process.
   * @default true
   */
  callerContext?: boolean;
  log: Logger;
}

export interface Served {
  /** http://host:port/graphql */
  url: string;
  /** ws://host:port/graphql */
  wsUrl: string;
  port: number;
  server: Server;
  stop(): Promise<void>;
}

/** A refusal answered as a GraphQL error body with a registry code. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Why, as `keelson_refusals_total` counts it. */
    readonly reason: RefusalReason,
  ) {
    super(message);
  }
}

function decoded(req: IncomingMessage): Readable {
  const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  switch (encoding) {
    case 'identity':
    case '':
      return req;
    case 'gzip':
    case 'x-gzip':
      return req.pipe(createGunzip());
    case 'deflate':
      return req.pipe(createInflate());
    case 'br':
      return req.pipe(createBrotliDecompress());
    default:
      throw new Refusal(415, 'BAD_REQUEST', `content-encoding "${encoding}" is not supported (gzip, deflate, br or none)`, 'encoding');
  }
}

/**
 * The body, decompressed, refused past `max` bytes of decompressed content (a zip bomb stops there).
 * Read from the stream's events rather than an async iterator: this runs on every request of every
 * service, and the iterator's promise per chunk showed in the gateway's profile.
 */
function readBody(req: IncomingMessage, max: number): Promise<string> {
  let stream: Readable;
  try {
    stream = decoded(req);
  } catch (err) {
    return Promise.reject(err as Error);
  }
  return new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (outcome: () => void) => {
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      stream.off('close', onClose);
      // A late error (the client resetting a body already refused) has nowhere to go.
      stream.on('error', () => undefined);
      outcome();
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        settle(() => reject(new Refusal(413, 'BAD_REQUEST', `request body exceeds ${max} bytes (after decompression)`, 'body_limit')));
        // Stop a decompressor; the request itself is drained by the refusal, so the client reads the 413.
        if (stream !== req) stream.destroy();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => settle(() => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8')));
    const onError = (err: Error) => settle(() => reject(new Refusal(400, 'BAD_REQUEST', `request body could not be read (${err.message})`, 'body_unreadable')));
    // Closed before its end (the client went away mid-body): nothing more will come.
    const onClose = () => settle(() => reject(new Refusal(400, 'BAD_REQUEST', 'request body could not be read (the connection closed before its end)', 'body_unreadable')));
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    stream.on('close', onClose);
  });
}

/** The path and query of a request target; the WHATWG parser only for a path it might normalise. */
function target(raw: string | undefined): { pathname: string; search: string } {
  const url = raw ?? '/';
  // A plain absolute path without a query is its own pathname; anything else goes through URL.
  if (PLAIN_PATH.test(url)) return { pathname: url, search: '' };
  const parsed = new URL(url, 'http://localhost');
  return { pathname: parsed.pathname, search: parsed.search };
}

/** Paths `new URL` leaves as they are: no dot segments, escapes, queries, fragments or backslashes. */
const PLAIN_PATH = /^\/(?:[A-Za-z0-9_~-]+\/?)*$/;

function headerMap(req: IncomingMessage): HeaderMap {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

/** Answers a refusal as a GraphQL error body (`extensions.code` and `status`) at that HTTP status. */
export function sendJsonError(res: ServerResponse, status: number, message: string, code: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  if (status === 401) res.setHeader('www-authenticate', 'Bearer');
  res.end(JSON.stringify({ errors: [{ message, extensions: { code, status } }] }));
}

const CORS_HEADERS =
  'authorization, content-type, apollo-require-preflight, x-apollo-operation-name, graphql-client-name, graphql-client-version, mcp-protocol-version, mcp-session-id, last-event-id';

/** Host and Origin checks shared by requests and upgrades; a refusal names what to configure. */
function screen(req: IncomingMessage, access: AccessPolicy): void {
  const host = req.headers.host;
  if (!hostAllowed(host, access)) {
    throw new Refusal(403, 'FORBIDDEN', `host "${host ?? ''}" is not served here; add it to KEELSON_PUBLIC_HOSTS if it is this mesh's name`, 'host');
  }
  const origin = req.headers.origin;
  if (!originAllowed(origin, host, access)) {
    throw new Refusal(403, 'FORBIDDEN', `origin "${origin}" may not call this service; add it to KEELSON_ALLOWED_ORIGINS to allow it`, 'origin');
  }
}

/** Who `authenticate` says is calling; a MeshError it throws becomes a refusal at its status. */
async function callerOf(authenticate: (req: IncomingMessage) => Promise<Caller>, req: IncomingMessage): Promise<Caller> {
  try {
    return await authenticate(req);
  } catch (err) {
    if (isMeshError(err)) throw new Refusal(err.status, err.code, err.message, err.code === 'UNAUTHENTICATED' ? 'unauthenticated' : 'credential');
    throw err;
  }
}

/** `/metrics` lists the operation names callers sent: a reader's credential (any read scope) first. */
async function authorizeMetrics(opts: Pick<ServeOptions<BaseContext>, 'authenticate' | 'metricsAuthenticate'>, req: IncomingMessage): Promise<void> {
  const caller = await callerOf(opts.metricsAuthenticate ?? opts.authenticate, req);
  if (!caller.scopes.includes('read')) throw new Refusal(403, 'FORBIDDEN', 'reading metrics needs a credential with the read scope', 'scope');
}

/** A GraphQL POST's body: parsed JSON when it says it is JSON (and is not empty), the raw text otherwise. */
async function graphQLBody(req: IncomingMessage, maxBody: number): Promise<unknown> {
  const raw = await readBody(req, maxBody);
  const type = String(req.headers['content-type'] ?? '');
  if (type.includes('application/json') && raw.length > 0) {
    try {
      return JSON.parse(raw);
    } catch {
      throw new Refusal(400, 'BAD_REQUEST', 'request body is not valid JSON', 'bad_json');
    }
  }
  return raw;
}

/** Runs one GraphQL request through Apollo Server (as the caller, unless `callerContext` is off) and writes its answer. */
async function executeGraphQL<TContext extends BaseContext>(
  opts: ServeOptions<TContext>,
  req: IncomingMessage,
  res: ServerResponse,
  request: { search: string; body: unknown; caller: Caller },
): Promise<void> {
  const { caller } = request;
  const execute = () =>
    opts.apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method ?? 'GET', headers: headerMap(req), search: request.search, body: request.body },
      context: () => opts.context(req, caller),
    });
  const response = await (opts.callerContext === false ? execute() : runAsCaller(caller, execute));
  for (const [key, value] of response.headers) res.setHeader(key, value);
  res.statusCode = response.status ?? 200;
  if (response.body.kind === 'complete') {
    res.end(response.body.string);
    return;
  }
  for await (const chunk of response.body.asyncIterator) res.write(chunk);
  res.end();
}

/**
 * Every HTTP request's handling: the Host/Origin screen, CORS (and its preflight), the GET routes,
 * the endpoints, then GraphQL at `path`, authenticated, its body bounded (streamed answers to
 * `eventStream`). A refusal is thrown as a `Refusal`.
 */
function requestHandler<TContext extends BaseContext>(
  opts: ServeOptions<TContext>,
  routes: Record<string, RouteHandler>,
  path: string,
  maxBody: number,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    screen(req, opts.access);
    const cors = corsOrigin(req.headers.origin, opts.access);
    if (cors) {
      res.setHeader('access-control-allow-origin', cors);
      res.setHeader('vary', 'origin');
    }
    const url = target(req.url);
    if (req.method === 'OPTIONS' && cors) {
      res.writeHead(204, {
        'access-control-allow-methods': 'GET, POST, DELETE, OPTIONS',
        'access-control-allow-headers': CORS_HEADERS,
        'access-control-max-age': '600',
      });
      res.end();
      return;
    }
    const route = routes[url.pathname];
    if (route && req.method === 'GET') {
      if (url.pathname === '/metrics' && opts.auth === 'on') await authorizeMetrics(opts, req);
      return route(req, res);
    }
    const endpoint = opts.endpoints?.[url.pathname];
    if (endpoint) return endpoint(req, res, () => readBody(req, maxBody));
    if (url.pathname !== path) {
      sendJsonError(res, 404, `no route ${url.pathname}; GraphQL is served at ${path}`, 'NOT_FOUND');
      return;
    }
    const caller = await callerOf(opts.authenticate, req);
    let body: unknown = undefined;
    if (req.method === 'POST') body = await graphQLBody(req, maxBody);
    if (opts.eventStream && /text\/event-stream|multipart\/mixed/i.test(String(req.headers.accept ?? '')) && (await opts.eventStream(req, res, body, caller))) return;
    await executeGraphQL(opts, req, res, { search: url.search, body, caller });
  };
}

/**
 * WebSocket upgrades at `path` only (404 elsewhere), screened like requests (403), handed to `ws`;
 * a refusal is a JSON answer on the raw socket, counted.
 */
function upgradeHandler(opts: Pick<ServeOptions<BaseContext>, 'name' | 'access'>, ws: WebSocketServer, path: string): (req: IncomingMessage, socket: Socket, head: Buffer) => void {
  return (req, socket, head) => {
    const refuse = (status: number, message: string) => {
      const body = JSON.stringify({ errors: [{ message, extensions: { code: status === 404 ? 'NOT_FOUND' : 'FORBIDDEN', status } }] });
      socket.end(`HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : 'Forbidden'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    };
    socket.on('error', () => undefined);
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== path) {
      countRefusal(opts.name, 'not_found');
      return refuse(404, `no WebSocket at ${req.url}; subscriptions are served at ${path}`);
    }
    try {
      screen(req, opts.access);
    } catch (err) {
      countRefusal(opts.name, err instanceof Refusal ? err.reason : 'origin');
      return refuse(403, (err as Error).message);
    }
    ws.handleUpgrade(req, socket, head, (client) => ws.emit('connection', client, req));
  };
}

/** Binds `server` to the port and host; resolves once it listens, rejects on a bind error. */
function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The URLs a bound server is dialled at: a wildcard bind on loopback (a Host every service answers to). */
function servedUrls(host: string, port: number, path: string, tls: boolean): { url: string; wsUrl: string } {
  const dialled = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host;
  const hostForUrl = dialled.includes(':') ? `[${dialled}]` : dialled;
  return { url: `${tls ? 'https' : 'http'}://${hostForUrl}:${port}${path}`, wsUrl: `${tls ? 'wss' : 'ws'}://${hostForUrl}:${port}${path}` };
}

/**
 * Serves one Apollo Server over `node:http` and, on the same port and path, a WebSocket server for
 * graphql-ws. Every request and upgrade must name an allowed Host, and carry an allowed Origin if
 * it carries one (403 otherwise, before anything else); GraphQL requests are authenticated (401);
 * bodies are bounded after decompression (413). CORS answers only the policy's explicit origins.
 */
export async function serveGraphQL<TContext extends BaseContext>(opts: ServeOptions<TContext>): Promise<Served> {
  const path = opts.path ?? '/graphql';
  const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  assertBindAllowed(opts.name, opts.host, opts.auth, opts.log);
  opts.apollo.addPlugin(metricsPlugin<TContext>(opts.name, opts.log));
  opts.apollo.addPlugin(tracingPlugin<TContext>());
  await opts.apollo.start();
  const routes: Record<string, RouteHandler> = { '/metrics': metricsRoute(), ...opts.routes };
  const handle = requestHandler(opts, routes, path, maxBody);

  const listener: RequestListener = (req, res) => {
    serverSpan(opts.name, req, res, () => handle(req, res)).catch((err: unknown) => {
      if (err instanceof Refusal) {
        countRefusal(opts.name, err.reason);
        // Drain what the client still sends, so it reads the answer instead of a reset.
        req.resume();
        sendJsonError(res, err.status, err.message, err.code);
        return;
      }
      if (isUnavailableError(err)) {
        // The credential lookup's database (or a service it needs) is not answering: a retryable 503.
        opts.log.warn({ err }, 'database or service unavailable (SERVICE_UNAVAILABLE for the client)');
        sendJsonError(res, statusOf('SERVICE_UNAVAILABLE'), UNAVAILABLE_MESSAGE, 'SERVICE_UNAVAILABLE');
        return;
      }
      opts.log.error({ err }, 'http handler failed');
      sendJsonError(res, 500, 'internal server error', 'INTERNAL_SERVER_ERROR');
    });
  };
  const server: Server = opts.tls ? tlsServer(opts.tls, listener) : createServer(listener);

  // Idle keep-alive connections outlive the clients' own idle timeouts (the gateway's pool closes
  // first, at the hint this sends), so no request goes out on a connection the server is closing.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;

  let disposeWs: (() => Promise<void> | void) | undefined;
  let wss: WebSocketServer | undefined;
  if (opts.websocket) {
    // Frames above the body limit close the socket (1009) before anything reads them: ws's default
    // would buffer and parse 100 MiB per frame, before the connection authenticates.
    const ws = new WebSocketServer({ noServer: true, maxPayload: maxBody });
    wss = ws;
    server.on('upgrade', upgradeHandler(opts, ws, path));
    disposeWs = opts.websocket(ws);
  }

  await listen(server, opts.port, opts.host);
  const port = (server.address() as AddressInfo).port;
  const { url, wsUrl } = servedUrls(opts.host, port, path, Boolean(opts.tls));
  opts.log.info({ url }, `${opts.name} listening`);

  let stopping: Promise<void> | undefined;
  return {
    url,
    wsUrl,
    port,
    server,
    stop() {
      stopping ??= (async () => {
        await disposeWs?.();
        if (wss) {
          for (const client of wss.clients) client.terminate();
          await new Promise<void>((resolve) => wss!.close(() => resolve()));
        }
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await opts.apollo.stop();
      })();
      return stopping;
    },
  };
}

/** A GET route answering `{ ok: true, service }` for probes. */
export function healthRoute(name: string): RouteHandler {
  return (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ok: true, service: name }));
  };
}

/**
 * An HTTPS server; with a client CA it asks every client for a certificate (without failing the
 * handshake itself: `acceptConnection` decides, so loopback clients may come without one) and
 * destroys each connection `acceptConnection` refuses before a byte of HTTP is read.
 */
function tlsServer(tls: NonNullable<ServeOptions<never>['tls']>, listener: RequestListener): Server {
  const server = createTlsServer(
    { cert: tls.cert, key: tls.key, ...(tls.clientCa ? { ca: tls.clientCa, requestCert: true, rejectUnauthorized: false } : {}) },
    listener,
  );
  const accept = tls.acceptConnection;
  if (accept) server.prependListener('secureConnection', (socket: TLSSocket) => {
    if (!accept(socket)) socket.destroy();
  });
  return server;
}
