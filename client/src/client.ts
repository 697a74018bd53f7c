import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print, type GraphQLFormattedError, type OperationDefinitionNode } from 'graphql';
import { createClient, type Client, type ClientOptions } from 'graphql-ws';

/** A credential: an API token (`kmt_…`) or a JWT, or a function that reads the current one. */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

export interface KeelsonClientOptions {
  /** The gateway's GraphQL endpoint, e.g. `http://127.0.0.1:4000/graphql` (WebSocket: the same path over ws:/wss:). */
  url: string;
  /** Sent as `authorization: Bearer …` over HTTP and in graphql-ws `connection_init`. */
  token?: TokenSource;
  /** A WebSocket implementation where there is no global one (Node 20: the `ws` package). */
  webSocketImpl?: unknown;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /**
   * How often graphql-ws reconnects a dropped socket before giving up (each reconnect resumes
   * every resumable subscription from its last cursor). @default 10
   */
  retryAttempts?: number;
  /** Waits before a reconnect (graphql-ws's `retryWait`). @default graphql-ws's randomised exponential back-off */
  retryWait?: ClientOptions['retryWait'];
  /** graphql-ws's event listeners (connected, closed, …). */
  on?: ClientOptions['on'];
}

/** A GraphQL response whose `errors` carry the mesh's `extensions.code` (schema/src/errors.ts). */
export interface KeelsonResult<T> {
  data?: T | null;
  errors?: readonly GraphQLFormattedError[];
}

/** An error answer, thrown by `request` and passed to a subscription's `error` handler. */
export class KeelsonError extends Error {
  /** The answer's errors, as the gateway sent them. */
  readonly errors: readonly GraphQLFormattedError[];
  // A plain field, not a parameter property: the source stays valid under `erasableSyntaxOnly`.
  constructor(errors: readonly GraphQLFormattedError[]) {
    super(errors.map((e) => `${e.message}${e.extensions?.code ? ` (${String(e.extensions.code)})` : ''}`).join('; '));
    this.errors = errors;
    this.name = 'KeelsonError';
  }
  /** The first error's `extensions.code` (BAD_USER_INPUT, FORBIDDEN, …). */
  get code(): string | undefined {
    const code = this.errors[0]?.extensions?.code;
    return typeof code === 'string' ? code : undefined;
  }
}

/** What a resumable subscription's root field yields: an event carrying its stream position. */
export type CursorEvent = { cursor: string };

export interface ResumableHandlers<TResult> {
  /** One event, in stream order, exactly once across reconnects. */
  next(value: TResult, cursor: string): void;
  /** The server refused or ended the subscription with errors, or reconnecting gave up. */
  error?(error: unknown): void;
  /** The stream ended (the server completed it, or `unsubscribe` was called). */
  complete?(): void;
}

export interface ResumableSubscription {
  /** The cursor of the last event delivered (the `after` of the next reconnect), or the starting one. */
  cursor(): string | null | undefined;
  /** Stops the subscription (the socket closes once nothing else uses it). */
  unsubscribe(): void;
}

export interface KeelsonClient {
  /** One query or mutation over HTTP; resolves with `data`, throws a `KeelsonError` on errors. */
  request<TResult, TVariables>(document: TypedDocumentNode<TResult, TVariables>, variables?: TVariables): Promise<TResult>;
  /**
   * Subscribes over graphql-ws and keeps the cursor of the last event. When the socket drops,
   * graphql-ws reconnects and this subscription is sent again with `after` set to that cursor, so
   * the server replays exactly what was missed: nothing lost, nothing repeated.
   */
  subscribeResumable<TResult, TVariables extends { after?: string | null }>(
    document: TypedDocumentNode<TResult, TVariables>,
    variables: TVariables,
    handlers: ResumableHandlers<TResult>,
  ): ResumableSubscription;
  /** The graphql-ws client underneath (one socket, shared by every subscription). */
  readonly ws: Client;
  /** Closes the socket. */
  dispose(): Promise<void>;
}

async function tokenOf(source: TokenSource | undefined): Promise<string | undefined> {
  return typeof source === 'function' ? source() : source;
}

function operationName(document: TypedDocumentNode<unknown, unknown>): string | undefined {
  const op = document.definitions.find((d): d is OperationDefinitionNode => d.kind === 'OperationDefinition');
  return op?.name?.value;
}

/** The cursor of an event: the one root field's `cursor`. */
export function cursorOf(value: unknown): string {
  const root = value && typeof value === 'object' ? Object.values(value as Record<string, unknown>) : [];
  const cursor = root.length === 1 && root[0] && typeof root[0] === 'object' ? (root[0] as { cursor?: unknown }).cursor : undefined;
  if (typeof cursor !== 'string') throw new Error('a resumable subscription selects exactly one root field, and `cursor` on it');
  return cursor;
}

/** A client of the mesh's gateway: typed requests over HTTP, resumable subscriptions over graphql-ws. */
export function createKeelsonClient(options: KeelsonClientOptions): KeelsonClient {
  const wsUrl = options.url.replace(/^http/, 'ws');
  const doFetch = options.fetch ?? globalThis.fetch;
  const ws = createClient({
    url: wsUrl,
    lazy: true,
    retryAttempts: options.retryAttempts ?? 10,
    // A dropped socket (1006, 1001, 4499 …) is retried; graphql-ws never retries a refusal (4400, 4401, 4403 …).
    shouldRetry: () => true,
    ...(options.retryWait ? { retryWait: options.retryWait } : {}),
    ...(options.webSocketImpl ? { webSocketImpl: options.webSocketImpl } : {}),
    ...(options.on ? { on: options.on } : {}),
    connectionParams: async () => {
      const token = await tokenOf(options.token);
      return token ? { authorization: `Bearer ${token}` } : {};
    },
  });

  return {
    ws,
    async request<TResult, TVariables>(document: TypedDocumentNode<TResult, TVariables>, variables?: TVariables): Promise<TResult> {
      const token = await tokenOf(options.token);
      const res = await doFetch(options.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify({ query: print(document), variables, operationName: operationName(document as TypedDocumentNode<unknown, unknown>) }),
      });
      const body = (await res.json()) as KeelsonResult<TResult>;
      if (body.errors?.length) throw new KeelsonError(body.errors);
      if (!body.data) throw new KeelsonError([{ message: `HTTP ${res.status} without data` }]);
      return body.data;
    },
    subscribeResumable<TResult, TVariables extends { after?: string | null }>(
      document: TypedDocumentNode<TResult, TVariables>,
      variables: TVariables,
      handlers: ResumableHandlers<TResult>,
    ): ResumableSubscription {
      // graphql-ws sends this payload again on every reconnect, serialising it then: keeping `after`
      // at the last delivered cursor here is what makes the retry a resume.
      const payload = {
        query: print(document),
        operationName: operationName(document as TypedDocumentNode<unknown, unknown>),
        variables: { ...variables } as Record<string, unknown>,
      };
      let stopped = false;
      const unsubscribe = ws.subscribe<TResult>(payload, {
        next: (result) => {
          if (stopped) return;
          if (result.errors?.length) {
            stopped = true;
            handlers.error?.(new KeelsonError(result.errors));
            unsubscribe();
            return;
          }
          const cursor = cursorOf(result.data);
          payload.variables = { ...payload.variables, after: cursor };
          handlers.next(result.data as TResult, cursor);
        },
        error: (err) => {
          if (stopped) return;
          stopped = true;
          handlers.error?.(Array.isArray(err) ? new KeelsonError(err as GraphQLFormattedError[]) : err);
        },
        complete: () => {
          if (stopped) return;
          stopped = true;
          handlers.complete?.();
        },
      });
      return {
        cursor: () => payload.variables.after as string | null | undefined,
        unsubscribe: () => {
          if (stopped) return;
          stopped = true;
          unsubscribe();
          handlers.complete?.();
        },
      };
    },
    dispose: () => ws.dispose() as Promise<void>,
  };
}
