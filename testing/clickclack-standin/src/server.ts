import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StandinApi, type StandinActor } from './api';
import { HttpError, readJson, type Reply } from './http';
import { RealtimeHub } from './realtime';
import { StandinStore } from './store';

export interface StandinServerOptions {
  /** `host:port`; `:8080` listens on every interface, as ClickClack's default does. */
  addr: string;
  dataDir: string;
  devBootstrap: boolean;
  /** `all` logs every request, `errors` only failures, `off` none. @default all */
  accessLog?: 'all' | 'errors' | 'off';
  /** The emulated ClickClack release. @default STANDIN_VERSION */
  version?: string;
  /** Where log lines go. @default stderr */
  log?: (line: string) => void;
}

export interface RunningStandin {
  url: string;
  api: StandinApi;
  /** Stops accepting, closes sockets, and waits up to `drainMs` for requests in flight. */
  stop(drainMs?: number): Promise<void>;
}

/** The ClickClack release the stand-in emulates unless told otherwise. */
export const STANDIN_VERSION = '0.7.0';

const SAFE_CORRELATION = /^[A-Za-z0-9._:-]{1,128}$/;

type Handler = (ctx: { req: IncomingMessage; actor: () => StandinActor; body: () => Promise<Record<string, unknown>>; query: URLSearchParams; params: string[]; correlationId: string }) => Reply | Promise<Reply>;

/** One route: method, path pattern, handler. */
type Route = [string, RegExp, Handler];

/** Splits `host:port` (`:8080` = every interface). */
export function parseAddr(addr: string): { host: string; port: number } {
  const at = addr.lastIndexOf(':');
  if (at === -1) throw new Error(`--addr must be host:port, got ${JSON.stringify(addr)}`);
  const port = Number(addr.slice(at + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--addr has no valid port: ${JSON.stringify(addr)}`);
  const host = addr.slice(0, at).replace(/^\[|\]$/g, '');
  return { host: host || '0.0.0.0', port };
}

/** The stand-in's HTTP routes: method, path pattern (its groups are the handler's params), handler. */
function standinRoutes(api: StandinApi): Route[] {
  return [
    ['GET', /^\/healthz$/, () => ({ status: 200, body: { status: 'ok' } })],
    ['GET', /^\/readyz$/, () => ({ status: 200, body: { status: 'ready' } })],
    ['POST', /^\/api\/auth\/magic\/request$/, async ({ req, body }) => api.magicRequest(req, await body())],
    ['POST', /^\/api\/auth\/magic\/consume$/, async ({ req, body }) => api.magicConsume(req, await body())],
    ['GET', /^\/api\/me$/, ({ actor }) => api.me(actor())],
    ['GET', /^\/api\/workspaces$/, ({ actor }) => api.listWorkspaces(actor())],
    ['POST', /^\/api\/workspaces$/, async ({ actor, body }) => api.createWorkspace(actor(), await body())],
    ['GET', /^\/api\/workspaces\/([^/]+)$/, ({ actor, params }) => api.getWorkspace(actor(), params[0]!)],
    ['GET', /^\/api\/workspaces\/([^/]+)\/channels$/, ({ actor, params }) => api.listChannels(actor(), params[0]!)],
    ['POST', /^\/api\/workspaces\/([^/]+)\/channels$/, async ({ actor, params, body }) => api.createChannel(actor(), params[0]!, await body())],
    ['GET', /^\/api\/workspaces\/([^/]+)\/bots$/, ({ actor, params }) => api.listBots(actor(), params[0]!)],
    ['POST', /^\/api\/workspaces\/([^/]+)\/bots$/, async ({ actor, params, body }) => api.createBot(actor(), params[0]!, await body())],
    ['POST', /^\/api\/workspaces\/([^/]+)\/bots\/([^/]+)\/tokens$/, async ({ actor, params, body }) => api.createBotToken(actor(), params[0]!, params[1]!, await body())],
    ['POST', /^\/api\/bot-tokens\/([^/]+)\/revoke$/, ({ actor, params }) => api.revokeBotToken(actor(), params[0]!)],
    ['DELETE', /^\/api\/bots\/([^/]+)$/, ({ actor, params }) => api.deleteBot(actor(), params[0]!)],
    ['GET', /^\/api\/channels\/([^/]+)\/messages$/, ({ actor, params, query }) => api.listMessages(actor(), params[0]!, query)],
    ['POST', /^\/api\/channels\/([^/]+)\/messages$/, async ({ actor, params, body, correlationId }) => api.postMessage(actor(), params[0]!, await body(), correlationId)],
    ['GET', /^\/api\/messages\/by-nonce$/, ({ actor, query }) => api.messageByNonce(actor(), query)],
    ['GET', /^\/api\/messages\/([^/]+)$/, ({ actor, params }) => api.getMessage(actor(), params[0]!)],
    ['GET', /^\/api\/messages\/([^/]+)\/thread$/, ({ actor, params, query }) => api.getThread(actor(), params[0]!, query)],
    ['POST', /^\/api\/messages\/([^/]+)\/thread\/replies$/, async ({ actor, params, body, correlationId }) => api.replyInThread(actor(), params[0]!, await body(), correlationId)],
    ['GET', /^\/api\/realtime\/events$/, ({ actor, query }) => api.pullEvents(actor(), query)],
  ];
}

/**
 * The stand-in's request handler: routes the request (404 for an unknown path, 405 for a known path
 * and another method), answers JSON with the correlation id, and writes the access log line.
 */
function requestHandler(routes: readonly Route[], api: StandinApi, store: StandinStore, log: (line: string) => void, accessLog: 'all' | 'errors' | 'off') {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://standin');
    const given = req.headers['x-correlation-id'];
    const correlationId = typeof given === 'string' && SAFE_CORRELATION.test(given) ? given : `cor_${store.ids.next()}`;
    let route = url.pathname;
    let reply: Reply;
    try {
      const match = routes.find(([method, pattern]) => method === req.method && pattern.test(url.pathname));
      if (!match) {
        const known = routes.some(([, pattern]) => pattern.test(url.pathname));
        throw new HttpError(known ? 405 : 404, known ? 'method not allowed' : 'not found');
      }
      route = match[1].source;
      let actor: StandinActor | undefined;
      reply = await match[2]({
        req,
        actor: () => (actor ??= api.actor(req)),
        body: () => readJson(req),
        query: url.searchParams,
        params: match[1].exec(url.pathname)!.slice(1).map(decodeURIComponent),
        correlationId,
      });
    } catch (err) {
      if (err instanceof HttpError) reply = { status: err.status, body: { error: err.message } };
      else {
        log(`level=ERROR msg="handler failed" route=${route} err=${JSON.stringify(String((err as Error)?.stack ?? err))}`);
        reply = { status: 500, body: { error: 'internal error' } };
      }
    }
    const text = JSON.stringify(reply.body);
    res.writeHead(reply.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'x-correlation-id': correlationId });
    res.end(text);
    if (accessLog === 'all' || (accessLog === 'errors' && reply.status >= 400)) {
      log(`level=INFO msg=request method=${req.method} host=${req.headers.host ?? ''} route=${url.pathname} status=${reply.status} correlation_id=${correlationId}`);
    }
  };
}

/** Boots the stand-in: the store is replayed from `dataDir`, the owner bootstrapped, then it listens. */
export async function startStandin(opts: StandinServerOptions): Promise<RunningStandin> {
  const log = opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const accessLog = opts.accessLog ?? 'all';
  const store = new StandinStore(opts.dataDir);
  const api = new StandinApi(store, { devBootstrap: opts.devBootstrap, version: opts.version ?? STANDIN_VERSION });
  api.bootstrap(log);
  const hub = new RealtimeHub(api);

  const handle = requestHandler(standinRoutes(api), api, store, log, accessLog);

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  server.on('upgrade', (req, socket, head) => hub.upgrade(req, socket, head));
  const { host, port } = parseAddr(opts.addr);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  log(`level=INFO msg="clickclack stand-in listening" addr=${urlHost}:${bound.port} data=${opts.dataDir}`);

  let stopping: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${bound.port}`,
    api,
    stop(drainMs = 5000) {
      stopping ??= (async () => {
        hub.close();
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const timer = setTimeout(() => server.closeAllConnections(), drainMs);
        await closed;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}
