import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

export interface GraphQLResponse<T = Record<string, unknown>> {
  data?: T | null;
  errors?: { message: string; extensions?: Record<string, unknown>; path?: (string | number)[] }[];
}

/** POSTs one operation as a browser client would (JSON body). */
export async function gql<T = Record<string, unknown>>(
  url: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<GraphQLResponse<T>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query, variables }),
  });
  return (await res.json()) as GraphQLResponse<T>;
}

/** Like gql, but throws on errors and returns data. */
export async function gqlData<T = Record<string, unknown>>(url: string, query: string, variables?: Record<string, unknown>): Promise<T> {
  const res = await gql<T>(url, query, variables);
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

/** Subscribes over graphql-ws (one client, one socket per subscription). */
export function subscribe<T = Record<string, unknown>>(
  wsUrl: string,
  query: string,
  variables?: Record<string, unknown>,
): Subscription<T> {
  let socket: WebSocket | undefined;
  const client: Client = createClient({
    url: wsUrl,
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: false,
    on: { connected: (s) => (socket = s as WebSocket) },
  });
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
  const unsubscribe = client.subscribe<T>(
    { query, variables },
    {
      next: (r) => push(r as GraphQLResponse<T>),
      error: (err) => {
        failure = err;
        const errors = Array.isArray(err) ? err : [{ message: String((err as Error)?.message ?? err) }];
        push({ errors });
        resolveCompleted();
      },
      complete: () => resolveCompleted(),
    },
  );
  const next = (timeoutMs = 15_000) =>
    new Promise<GraphQLResponse<T>>((resolve, reject) => {
      const queued = queue.shift();
      if (queued) return resolve(queued);
      const timer = setTimeout(() => {
        const i = waiters.indexOf(done);
        if (i >= 0) waiters.splice(i, 1);
        reject(new Error(`no subscription result within ${timeoutMs} ms${failure ? ` (failed: ${JSON.stringify(failure)})` : ''}`));
      }, timeoutMs);
      const done = (r: GraphQLResponse<T>) => {
        clearTimeout(timer);
        resolve(r);
      };
      waiters.push(done);
    });
  return {
    next,
    async take(n, timeoutMs) {
      const out: GraphQLResponse<T>[] = [];
      for (let i = 0; i < n; i++) out.push(await next(timeoutMs));
      return out;
    },
    pending: () => queue.length,
    async drop() {
      socket?.terminate();
      await client.dispose();
    },
    async close() {
      unsubscribe();
      await client.dispose();
    },
    completed,
  };
}
