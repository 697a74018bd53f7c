import { createKeelsonClient, KeelsonError, type KeelsonClientOptions, type TypedDocumentNode } from '@keelson/client';
import { parse } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

export interface GraphQLResponse<T = Record<string, unknown>> {
  data?: T | null;
  errors?: { message: string; extensions?: Record<string, unknown>; path?: (string | number)[] }[];
}

/** How a test speaks to one service: HTTP headers and the graphql-ws `connection_init` payload. */
export interface Credentials {
  headers(): Promise<Record<string, string>>;
  connectionParams(): Promise<Record<string, string>>;
}

/**
 * Credentials by origin (`http://127.0.0.1:PORT`): the test stack registers its gateway with its
 * admin token and each subgraph with a signed service assertion, so every request a test sends is
 * authenticated as a real client's would be. A test checking refusals passes `{ auth: false }` or
 * credentials of its own.
 */
const registry = new Map<string, Credentials>();

function originOf(url: string): string {
  const u = new URL(url);
  return `${u.protocol === 'ws:' ? 'http:' : u.protocol === 'wss:' ? 'https:' : u.protocol}//${u.host}`;
}

/** Speak to the service at `url` (any URL on its origin) with `credentials` by default. */
export function registerCredentials(url: string, credentials: Credentials): () => void {
  const origin = originOf(url);
  registry.set(origin, credentials);
  return () => {
    if (registry.get(origin) === credentials) registry.delete(origin);
  };
}

/** A bearer token as credentials (the gateway). */
export function bearer(token: string): Credentials {
  return {
    headers: async () => ({ authorization: `Bearer ${token}` }),
    connectionParams: async () => ({ authorization: `Bearer ${token}` }),
  };
}

export interface RequestOptions {
  /** false: send no credential at all. @default the credentials registered for the URL's origin */
  auth?: Credentials | false;
  /** Extra headers (they win over the credentials'). */
  headers?: Record<string, string>;
}

async function credentialHeaders(url: string, opts: RequestOptions): Promise<Record<string, string>> {
  const credentials = opts.auth === false ? undefined : opts.auth ?? registry.get(originOf(url));
  return { ...(await credentials?.headers()), ...opts.headers };
}

/** POSTs one operation as a browser client would (JSON body), with the origin's credentials; the answer and its HTTP status. */
export async function gqlHttp<T = Record<string, unknown>>(
  url: string,
  query: string,
  variables?: Record<string, unknown>,
  opts: RequestOptions = {},
): Promise<{ status: number; body: GraphQLResponse<T> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(await credentialHeaders(url, opts)) },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as GraphQLResponse<T> };
}

/** POSTs one operation as a browser client would (JSON body), with the origin's credentials. */
export async function gql<T = Record<string, unknown>>(
  url: string,
  query: string,
  variables?: Record<string, unknown>,
  opts: RequestOptions = {},
): Promise<GraphQLResponse<T>> {
  return (await gqlHttp<T>(url, query, variables, opts)).body;
}

/** Like gql, but throws on errors and returns data. */
export async function gqlData<T = Record<string, unknown>>(url: string, query: string, variables?: Record<string, unknown>, opts: RequestOptions = {}): Promise<T> {
  const res = await gql<T>(url, query, variables, opts);
  if (res.errors?.length || !res.data) throw new Error(`GraphQL errors: ${JSON.stringify(res.errors)}`);
  return res.data;
}

/** A live subscription whose results queue up until taken. */
export interface Subscription<T> {
  /** Resolves with the next result (waits up to `timeoutMs`). */
  next(timeoutMs?: number): Promise<GraphQLResponse<T>>;
  /** Takes `n` results. */
  take(n: number, timeoutMs?: number): Promise<GraphQLResponse<T>[]>;
  /** Results received but not yet taken. */
  pending(): number;
  /** Closes the socket abruptly (as a dropped network would). */
  drop(): Promise<void>;
  /** Completes the subscription and closes the client politely. */
  close(): Promise<void>;
  completed: Promise<void>;
}

/** Subscribes over graphql-ws (one client, one socket per subscription), with the origin's credentials. */
export function subscribe<T = Record<string, unknown>>(
  wsUrl: string,
  query: string,
  variables?: Record<string, unknown>,
  opts: Pick<RequestOptions, 'auth'> = {},
): Subscription<T> {
  let socket: WebSocket | undefined;
  const credentials = opts.auth === false ? undefined : opts.auth ?? registry.get(originOf(wsUrl));
  const client: Client = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: false,
    connectionParams: async () => (await credentials?.connectionParams()) ?? {},
    // A closed socket reaches the subscription's error handler below; not also the console.
    onNonLazyError: () => undefined,
    on: { connected: (s) => (socket = s as WebSocket) },
  });
  const queue = resultQueue<T>((failure) => JSON.stringify(failure));
  const unsubscribe = client.subscribe<T>(
    { query, variables },
    {
      next: (r) => queue.push(r as GraphQLResponse<T>),
      error: (err) => {
        // graphql-ws reports a closed socket as its CloseEvent: keep the code and reason readable.
        const close = err as { code?: unknown; reason?: unknown; message?: unknown };
        const message = typeof close?.code === 'number' ? `close ${close.code}: ${String(close.reason ?? '')}` : String(close?.message ?? err);
        queue.fail(err, Array.isArray(err) ? err : [{ message }]);
      },
      complete: queue.complete,
    },
  );
  return {
    next: queue.next,
    take: queue.take,
    pending: queue.pending,
    async drop() {
      socket?.terminate();
      await client.dispose();
    },
    async close() {
      unsubscribe();
      await client.dispose();
    },
    completed: queue.completed,
  };
}

/** A stream through `@keelson/client`'s subscribeResumable: results queue up until taken. */
export interface ResumableStream<T> extends Pick<Subscription<T>, 'next' | 'take' | 'pending' | 'completed'> {
  /** The last event's cursor (the `after` the next reconnect sends). */
  cursor(): string | null | undefined;
  /** How often the client has connected (1, then once more per resume). */
  connections(): number;
  /** Cuts the socket as a dropped network would (no close frame); the client reconnects and resumes. */
  dropSocket(): void;
  /** Unsubscribes and closes the client. */
  close(): Promise<void>;
}

/**
 * Subscribes as a frontend would, with `@keelson/client`'s `subscribeResumable` (typed document or
 * SDL text; its variables include `after`), with the origin's credentials. A dropped socket is
 * reconnected at once and the stream resumed from its last cursor.
 */
export function subscribeResumable<T = Record<string, unknown>, V extends { after?: string | null } = { after?: string | null }>(
  url: string,
  document: TypedDocumentNode<T, V> | string,
  variables: V = {} as V,
  opts: Pick<RequestOptions, 'auth'> & Pick<KeelsonClientOptions, 'retryWait'> = {},
): ResumableStream<T> {
  const credentials = opts.auth === false ? undefined : opts.auth ?? registry.get(originOf(url));
  let socket: WebSocket | undefined;
  let connections = 0;
  const client = createKeelsonClient({
    url: url.replace(/^ws/, 'http'),
    webSocketImpl: WebSocket,
    token: async () => (await credentials?.connectionParams())?.authorization?.replace(/^Bearer /, ''),
    retryWait: opts.retryWait ?? (() => new Promise((r) => setTimeout(r, 50))),
    on: {
      connected: (s) => {
        socket = s as WebSocket;
        connections++;
      },
    },
  });
  const queue = resultQueue<T>();
  const sub = client.subscribeResumable<T, V>(typeof document === 'string' ? (parse(document) as TypedDocumentNode<T, V>) : document, variables, {
    next: (data) => queue.push({ data }),
    error: (err) => queue.fail(err, (err instanceof KeelsonError ? err.errors : [{ message: String((err as Error)?.message ?? err) }]) as GraphQLResponse<T>['errors']),
    complete: queue.complete,
  });
  return {
    next: queue.next,
    take: queue.take,
    pending: queue.pending,
    completed: queue.completed,
    cursor: () => sub.cursor(),
    connections: () => connections,
    dropSocket: () => socket?.terminate(),
    async close() {
      sub.unsubscribe();
      await client.dispose();
    },
  };
}

/** Results queued until taken, and the stream's end; `describe` renders a failure in a timed-out `next`'s message. */
function resultQueue<T>(describe: (failure: unknown) => string = String) {
  const queue: GraphQLResponse<T>[] = [];
  const waiters: ((r: GraphQLResponse<T>) => void)[] = [];
  let failure: unknown;
  let resolveCompleted!: () => void;
  const completed = new Promise<void>((r) => (resolveCompleted = r));
  const push = (r: GraphQLResponse<T>) => {
    const w = waiters.shift();
    if (w) w(r);
    else queue.push(r);
  };
  const next = (timeoutMs = 15_000) =>
    new Promise<GraphQLResponse<T>>((resolve, reject) => {
      const queued = queue.shift();
      if (queued) return resolve(queued);
      const timer = setTimeout(() => {
        const i = waiters.indexOf(done);
        if (i >= 0) waiters.splice(i, 1);
        reject(new Error(`no subscription result within ${timeoutMs} ms${failure ? ` (failed: ${describe(failure)})` : ''}`));
      }, timeoutMs);
      const done = (r: GraphQLResponse<T>) => {
        clearTimeout(timer);
        resolve(r);
      };
      waiters.push(done);
    });
  return {
    push,
    /** The stream failed: `errors` is its last result, and it is complete. */
    fail(err: unknown, errors: GraphQLResponse<T>['errors']) {
      failure = err;
      push({ errors });
      resolveCompleted();
    },
    complete: () => resolveCompleted(),
    completed,
    next,
    async take(n: number, timeoutMs?: number) {
      const out: GraphQLResponse<T>[] = [];
      for (let i = 0; i < n; i++) out.push(await next(timeoutMs));
      return out;
    },
    pending: () => queue.length,
  };
}
