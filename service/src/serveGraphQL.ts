import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HeaderMap, type ApolloServer, type BaseContext } from '@apollo/server';
import { WebSocketServer } from 'ws';
import { assertBindAllowed } from './bindGuard';
import type { Logger } from './logger';

/** The largest request body accepted, in bytes. @default 1 MiB */
const MAX_BODY_BYTES = 1024 * 1024;

export type RouteHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface ServeOptions<TContext extends BaseContext> {
  /** Service name for logs and errors. */
  name: string;
  host: string;
  /** 0 picks a free port. */
  port: number;
  insecureBind?: boolean;
  /** Not yet started: serveGraphQL starts and stops it. */
  apollo: ApolloServer<TContext>;
  context: (req: IncomingMessage) => Promise<TContext>;
  /** Attaches the subscription server; returns its dispose function. */
  websocket?: (wss: WebSocketServer) => () => Promise<void> | void;
  /** Extra GET routes (exact path), e.g. a health probe or an explorer page. */
  routes?: Record<string, RouteHandler>;
  /** @default /graphql */
  path?: string;
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

class BodyTooLarge extends Error {}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > MAX_BODY_BYTES) throw new BodyTooLarge(`request body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function headerMap(req: IncomingMessage): HeaderMap {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

function sendJsonError(res: ServerResponse, status: number, message: string, code: string): void {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ errors: [{ message, extensions: { code, status } }] }));
}

/**
 * Serves one Apollo Server over `node:http` and, on the same port and path, a WebSocket server for
 * graphql-ws. Binds loopback unless the operator opted in (see assertBindAllowed).
 */
export async function serveGraphQL<TContext extends BaseContext>(opts: ServeOptions<TContext>): Promise<Served> {
  const path = opts.path ?? '/graphql';
  assertBindAllowed(opts.name, opts.host, opts.insecureBind ?? false, opts.log);
  await opts.apollo.start();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = opts.routes?.[url.pathname];
    if (route && req.method === 'GET') return route(req, res);
    if (url.pathname !== path) {
      sendJsonError(res, 404, `no route ${url.pathname}; GraphQL is served at ${path}`, 'NOT_FOUND');
      return;
    }
    let body: unknown = undefined;
    if (req.method === 'POST') {
      const raw = await readBody(req);
      const type = String(req.headers['content-type'] ?? '');
      if (type.includes('application/json') && raw.length > 0) {
        try {
          body = JSON.parse(raw);
        } catch {
          sendJsonError(res, 400, 'request body is not valid JSON', 'BAD_REQUEST');
          return;
        }
      } else {
        body = raw;
      }
    }
    const response = await opts.apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method ?? 'GET', headers: headerMap(req), search: url.search, body },
      context: () => opts.context(req),
    });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof BodyTooLarge) {
        sendJsonError(res, 413, err.message, 'BAD_REQUEST');
        return;
      }
      opts.log.error({ err }, 'http handler failed');
      if (!res.headersSent) sendJsonError(res, 500, 'internal server error', 'INTERNAL_SERVER_ERROR');
      else res.end();
    });
  });

  let disposeWs: (() => Promise<void> | void) | undefined;
  let wss: WebSocketServer | undefined;
  if (opts.websocket) {
    wss = new WebSocketServer({ server, path });
    disposeWs = opts.websocket(wss);
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  const url = `http://${hostForUrl}:${port}${path}`;
  const wsUrl = `ws://${hostForUrl}:${port}${path}`;
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
