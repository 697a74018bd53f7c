import { operationFromDocument, type Schema, type Supergraph } from '@apollo/federation-internals';
import { buildOperationContext, executeQueryPlan, type GraphQLDataSource } from '@apollo/gateway';
import { QueryPlanner, type FetchNode, type PlanNode, type QueryPlan } from '@apollo/query-planner';
import { ASSERTION_PARAM, closeCodes, type Caller } from '@keelson/schema';
import { armor, clientSocket, parseLimited, subscriptionGauge, type AssertionKey, type ClientSocketConstructor, type Logger, type RequestLimits } from '@keelson/service';
import {
  getOperationAST,
  getVariableValues,
  GraphQLError,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type FormattedExecutionResult,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type ValidationRule,
} from 'graphql';
import { createClient, type Client, type SubscribePayload } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import type { WebSocket, WebSocketServer } from 'ws';
import { credentialKey, type AcceptedCredential, type CredentialCheck } from './auth/credentials';
import { checkScopes, type ScopeMap } from './auth/scopeRequirements';
import { gatewayError, type GatewayErrorFormatter } from './errors';
import type { SubgraphEndpoint } from './subgraphEndpoints';

/** The largest graphql-ws message a client may send, in bytes. */
const MAX_MESSAGE_BYTES = 1024 * 1024;

export interface SubscriptionRouterOptions {
  supergraph: Supergraph;
  /** The API schema clients validate against (the supergraph's, as a graphql-js schema). */
  apiSchema: GraphQLSchema;
  /** The supergraph's scope requirements, enforced per subscription before it is planned. */
  scopeMap: ScopeMap;
  limits: RequestLimits;
  /** Signs the caller for the owning subgraph's `connection_init` and for entity fetches. */
  assertions: AssertionKey;
  /** Who a `connection_init`'s `authorization` stands for (anonymous when authentication is off). */
  authenticate(authorization: string | undefined): Promise<AcceptedCredential>;
  /** Revocations and liveness of tokens behind open sockets (absent when authentication is off). */
  credentials?: CredentialCheck;
  /** Where each subgraph is served, by subgraph name. */
  endpoints: ReadonlyMap<string, SubgraphEndpoint>;
  /**
   * The HTTP data sources, by subgraph name, that fetch per event the fields a subscription
   * selects from subgraphs other than the one owning its root field.
   */
  dataSources: Readonly<Record<string, GraphQLDataSource>>;
  formatError: GatewayErrorFormatter;
  log: Logger;
  /** Time allowed to open an upstream WebSocket and receive `connection_ack`. @default 5000 */
  upstreamConnectTimeoutMs?: number;
  /**
   * Events held for a client that reads slower than its subgraph writes; one more closes the
   * client's socket with 1013 (slow consumer), and it resumes every stream from its last cursor.
   * @default 1000
   */
  maxQueuedEvents?: number;
  /** Subscriptions one socket may hold; one more is refused with BAD_REQUEST. @default 100 */
  maxSubscriptionsPerSocket?: number;
  /** Sockets one credential may hold open; one more is closed 4429. @default 50 */
  maxConnectionsPerCredential?: number;
  /** How often the tokens behind open sockets are checked again (expiry, missed revocations). @default 5000 */
  recheckIntervalMs?: number;
}

/** The parts of the router that a supergraph reload replaces. */
export type RouterGraph = Pick<SubscriptionRouterOptions, 'supergraph' | 'apiSchema' | 'scopeMap' | 'endpoints' | 'dataSources'>;

export interface SubscriptionRouter {
  /**
   * Plans subscriptions from now on against `graph`. Open subscriptions keep the graph they were
   * planned with, and their sockets: a reload never closes a stream.
   */
  reload(graph: RouterGraph): void;
  /** Closes every client connection and every upstream socket. */
  dispose(): Promise<void>;
}

/** One accepted subscription: what to send upstream and how to complete each event. */
interface Route {
  /** The root field's response name, for logs. */
  field: string;
  endpoint: SubgraphEndpoint;
  /** The subscription operation the owning subgraph receives. */
  primary: FetchNode;
  /** Entity fetches that complete each event with fields other subgraphs own. */
  rest: PlanNode | undefined;
  document: DocumentNode;
  operationContext: ReturnType<typeof buildOperationContext>;
  variables: Record<string, unknown>;
  query: string;
  operationName: string | undefined;
}

/** What `onSubscribe` hands to `subscribe` through graphql-ws's execution args. */
interface RouteContext {
  route: Route;
  pool: UpstreamPool;
  /** The graph's parts the subscription was planned with (kept across reloads). */
  shared: Shared;
}

/** What the router keeps on each graphql-ws connection. */
type Connection = Extra & {
  caller?: Caller;
  /** Under which key the socket is counted and revoked. */
  credential?: string;
  expiryTimer?: NodeJS.Timeout;
} & Record<PropertyKey, unknown>;

type RequestContext = Parameters<typeof executeQueryPlan>[2];

interface Shared {
  supergraphSchema: GraphQLSchema;
  apiSchema: Schema;
  dataSources: Readonly<Record<string, GraphQLDataSource>>;
  maxQueuedEvents: number;
  log: Logger;
}

/** GraphQL errors a subgraph answered a subscribe with (its `error` message), relayed as they are. */
class UpstreamErrors extends Error {
  constructor(readonly errors: readonly GraphQLFormattedError[]) {
    super(errors.map((e) => e.message).join('; ') || 'the subgraph rejected the subscription');
    this.name = 'UpstreamErrors';
  }
}

function upstreamSocket(handshakeTimeout: number): ClientSocketConstructor {
  return clientSocket({ handshakeTimeout, perMessageDeflate: false });
}

/** One upstream graphql-ws client, shared by one client connection's subscriptions to one subgraph. */
interface UpstreamLink {
  client: Client;
  /** Subscriptions using this link; at zero the link is shut and forgotten. */
  users: number;
  /** True while the socket is acknowledged; decides how a link is shut. */
  acked: boolean;
  /** True once any socket of this link was acknowledged: a later failure is "lost", not "unreachable". */
  everAcked: boolean;
}

function shut(link: UpstreamLink): void {
  void Promise.resolve(link.client.dispose()).catch(() => undefined);
  // dispose() waits for a pending handshake to finish; terminate() ends it now (close 4499).
  if (!link.acked) link.client.terminate();
}

/** The upstream links of one client connection, by subgraph name. */
class UpstreamPool {
  private readonly links = new Map<string, UpstreamLink>();
  private closed = false;

  constructor(
    private readonly socketImpl: ClientSocketConstructor,
    private readonly connectTimeoutMs: number,
    /** The client connection's caller, asserted to every subgraph it reaches. */
    readonly caller: Caller,
    private readonly assertions: AssertionKey,
    /** Ends the client connection (a slow consumer). */
    readonly closeClient: (code: number, reason: string) => void,
  ) {}

  /** A link to `endpoint` and its release; throws once the client connection has closed. */
  acquire(endpoint: SubgraphEndpoint): { link: UpstreamLink; release: () => void } {
    if (this.closed) throw new Error('the client connection has closed');
    let link = this.links.get(endpoint.name);
    if (!link) {
      link = this.open(endpoint);
      this.links.set(endpoint.name, link);
    }
    const held = link;
    held.users += 1;
    let released = false;
    return {
      link: held,
      release: () => {
        if (released) return;
        released = true;
        held.users -= 1;
        if (held.users > 0) return;
        if (this.links.get(endpoint.name) === held) this.links.delete(endpoint.name);
        shut(held);
      },
    };
  }

  close(): void {
    this.closed = true;
    for (const link of this.links.values()) shut(link);
    this.links.clear();
  }

  private open(endpoint: SubgraphEndpoint): UpstreamLink {
    const link = { users: 0, acked: false, everAcked: false } as UpstreamLink;
    link.client = createClient({
      url: endpoint.wsUrl,
      webSocketImpl: this.socketImpl,
      lazy: true,
      lazyCloseTimeout: 0,
      connectionParams: async () => ({ [ASSERTION_PARAM]: await this.assertions.sign(this.caller) }),
      // A lost upstream ends the subscription with SERVICE_UNAVAILABLE; the client resumes from its
      // cursor. Retrying here would hide a gap the client cannot see.
      retryAttempts: 0,
      connectionAckWaitTimeout: this.connectTimeoutMs,
      on: {
        connected: () => {
          link.acked = true;
          link.everAcked = true;
        },
        closed: () => {
          link.acked = false;
        },
      },
    });
    return link;
  }
}

/** A close event as `close <code>: <reason>`, an error event or error by its message. */
function describeClose(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const { code, reason, message } = err as { code?: unknown; reason?: unknown; message?: unknown };
    if (typeof code === 'number') return `close ${code}${reason ? `: ${String(reason)}` : ''}`;
    if (typeof message === 'string') return message;
  }
  return String(err);
}

/**
 * One subscription routed to its owning subgraph: an async iterator the graphql-ws server drains.
 * The upstream subscription opens on the first `next()`; events are completed (entity fetches) and
 * buffered in arrival order; `return()` — the client completed or disconnected — cancels upstream
 * at once, wherever the upstream handshake stands.
 */
class RoutedSubscription implements AsyncIterableIterator<ExecutionResult, undefined> {
  private readonly buffer: ExecutionResult[] = [];
  private failure: Error | undefined;
  /** Nothing more will be buffered: the upstream completed or failed. */
  private finished = false;
  /** The consumer left (`return()`): nothing more will be delivered. */
  private cancelled = false;
  private started = false;
  private wake: (() => void) | undefined;
  /** Serializes per-event work so events reach the client in upstream order. */
  private pipeline: Promise<void> = Promise.resolve();
  private stopUpstream: (() => void) | undefined;
  private releaseLink: (() => void) | undefined;

  constructor(
    private readonly route: Route,
    private readonly pool: UpstreamPool,
    private readonly shared: Shared,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  async next(): Promise<IteratorResult<ExecutionResult, undefined>> {
    if (!this.started) this.start();
    for (;;) {
      if (this.cancelled) return { done: true, value: undefined };
      const value = this.buffer.shift();
      if (value) return { done: false, value };
      if (this.failure) {
        const failure = this.failure;
        this.failure = undefined;
        this.cancelled = true;
        throw failure;
      }
      if (this.finished) return { done: true, value: undefined };
      await new Promise<void>((resolve) => (this.wake = resolve));
    }
  }

  async return(): Promise<IteratorResult<ExecutionResult, undefined>> {
    this.cancelled = true;
    this.buffer.length = 0;
    this.cleanUp();
    this.notify();
    return { done: true, value: undefined };
  }

  async throw(err: unknown): Promise<IteratorResult<ExecutionResult, undefined>> {
    await this.return();
    throw err;
  }

  private start(): void {
    this.started = true;
    const { route, shared } = this;
    let acquired: ReturnType<UpstreamPool['acquire']>;
    try {
      acquired = this.pool.acquire(route.endpoint);
    } catch {
      this.settle(gatewayError('SERVICE_UNAVAILABLE', 'the connection is closing; subscribe again'));
      return;
    }
    const { link, release } = acquired;
    this.releaseLink = release;
    const variables: Record<string, unknown> = {};
    for (const name of route.primary.variableUsages ?? []) {
      if (route.variables[name] !== undefined) variables[name] = route.variables[name];
    }
    this.stopUpstream = link.client.subscribe(
      { query: route.primary.operation, variables, operationName: route.primary.operationName },
      {
        next: (event) => this.enqueue(async () => {
          const result = await this.complete(event as FormattedExecutionResult);
          this.push(result);
        }),
        error: (err) => this.enqueue(() => this.settle(this.upstreamFailure(err, link))),
        complete: () => this.enqueue(() => this.settle()),
      },
    );
    shared.log.debug({ subgraph: route.endpoint.name, field: route.field }, 'subscription routed');
  }

  /** Runs `step` after every earlier event's step; a step that throws ends the subscription masked. */
  private enqueue(step: () => void | Promise<void>): void {
    this.pipeline = this.pipeline
      .then(() => (this.cancelled || this.finished ? undefined : step()))
      .catch((err: unknown) => this.settle(new GraphQLError('completing a subscription event failed', { originalError: err as Error })));
  }

  /**
   * Completes one upstream event as the gateway completes a query: through the query plan, with
   * the owning subgraph's answer replayed as the primary fetch, so fields of other subgraphs are
   * fetched as `_entities` and the result is shaped (aliases, `__typename`, nullability) to the
   * client's selection.
   */
  private async complete(event: FormattedExecutionResult): Promise<ExecutionResult> {
    const { route, shared } = this;
    const owner = shared.dataSources[route.endpoint.name];
    const replay: GraphQLDataSource = {
      process: (options) =>
        options.request.query === route.primary.operation
          ? Promise.resolve({ data: event.data ?? null, errors: event.errors as GraphQLError[] | undefined })
          : owner!.process(options),
    };
    const plan: QueryPlan = {
      kind: 'QueryPlan',
      node: route.rest ? { kind: 'Sequence', nodes: [route.primary, route.rest] } : route.primary,
    };
    // executeQueryPlan reads only these fields of Apollo Server's request context.
    const requestContext = {
      request: { query: route.query, operationName: route.operationName, variables: route.variables },
      context: { caller: this.pool.caller },
      metrics: {},
      logger: shared.log,
    } as unknown as RequestContext;
    const result = await executeQueryPlan(
      plan,
      { ...shared.dataSources, [route.endpoint.name]: replay },
      requestContext,
      route.operationContext,
      shared.supergraphSchema,
      shared.apiSchema,
    );
    // Apollo Gateway reports a null in a non-null position as `extensions.valueCompletion` when
    // nothing else failed; an event has no response extensions, so it becomes the event's error.
    const errors = result.errors?.length ? result.errors : (result.extensions?.valueCompletion as GraphQLError[] | undefined) ?? [];
    return { data: result.data ?? null, ...(errors.length ? { errors } : {}) };
  }

  private push(result: ExecutionResult): void {
    if (this.cancelled || this.finished) return;
    if (this.buffer.length >= this.shared.maxQueuedEvents) {
      // A slow consumer: its whole connection goes (close 1013), every stream resumes from its cursor.
      this.shared.log.warn({ field: this.route.field, queued: this.buffer.length }, 'slow subscriber closed');
      this.pool.closeClient(closeCodes.slowConsumer, `slow consumer: ${this.buffer.length} events queued; reconnect and resume from your last cursors`);
      void this.return();
      return;
    }
    this.buffer.push(result);
    this.notify();
  }

  private upstreamFailure(err: unknown, link: UpstreamLink): Error {
    const { endpoint, field } = this.route;
    if (Array.isArray(err)) return new UpstreamErrors(err as GraphQLFormattedError[]);
    this.shared.log.warn({ subgraph: endpoint.name, url: endpoint.wsUrl, field, reason: describeClose(err) }, 'upstream subscription failed');
    return gatewayError(
      'SERVICE_UNAVAILABLE',
      link.everAcked
        ? `subscription ${field} ended: the connection to subgraph "${endpoint.name}" was lost (${describeClose(err)}); resubscribe from the last cursor it saw`
        : `subscription ${field} failed: subgraph "${endpoint.name}" is unreachable; retry shortly`,
      { subgraph: endpoint.name },
    );
  }

  /** Ends the subscription once: buffered events are still delivered, then `failure` (if any). */
  private settle(failure?: Error): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = failure;
    this.cleanUp();
    this.notify();
  }

  private cleanUp(): void {
    this.stopUpstream?.();
    this.stopUpstream = undefined;
    this.releaseLink?.();
    this.releaseLink = undefined;
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}

/**
 * Serves graphql-ws on `wss` and routes each subscription to the subgraph that owns its root
 * field (found by the query planner from the supergraph's `@join__*` directives). See
 * schema/PROTOCOL.md, "Gateway subscription routing" and "Authentication".
 *
 * A connection is authenticated at `connection_init` (its `authorization` value, as the HTTP
 * header): without an accepted credential it is closed 4401, past the per-credential cap 4429. A
 * revoked token's sockets close 4401 at once (and a recheck every few seconds catches expiry or a
 * missed revocation). Each subscription is limited (tokens, depth, aliases, cost, directives),
 * checked against the declared scopes (FORBIDDEN) and capped per socket before it is planned.
 */
export function useSubscriptionRouter(wss: WebSocketServer, options: SubscriptionRouterOptions): SubscriptionRouter {
  const { formatError, log, limits } = options;
  const rules: ValidationRule[] = [...specifiedRules, ...armor(limits).validationRules];
  const maxSubscriptions = options.maxSubscriptionsPerSocket ?? 100;
  const maxConnections = options.maxConnectionsPerCredential ?? 50;
  /** Everything planning reads from the supergraph; swapped whole by `reload`. */
  const prepare = (graph: RouterGraph) => ({
    schema: graph.apiSchema,
    apiSchema: graph.supergraph.apiSchema(),
    scopeMap: graph.scopeMap,
    endpoints: graph.endpoints,
    planner: new QueryPlanner(graph.supergraph),
    shared: {
      supergraphSchema: graph.supergraph.schema.toGraphQLJSSchema(),
      apiSchema: graph.supergraph.apiSchema(),
      dataSources: graph.dataSources,
      maxQueuedEvents: options.maxQueuedEvents ?? 1000,
      log,
    } satisfies Shared,
  });
  let current = prepare(options);
  const socketImpl = upstreamSocket(options.upstreamConnectTimeoutMs ?? 5000);
  const pools = new Map<object, UpstreamPool>();
  /** Open sockets by credential key (`token:<id>` for API tokens). */
  const sockets = new Map<string, Set<WebSocket>>();

  const closeAll = (key: string, reason: string) => {
    for (const socket of sockets.get(key) ?? []) socket.close(closeCodes.unauthenticated, reason);
  };
  const unsubscribeRevoked = options.credentials?.onRevoked((tokenId) => closeAll(`token:${tokenId}`, 'token revoked'));
  const recheck = setInterval(() => {
    const credentials = options.credentials;
    const ids = [...sockets.keys()].filter((k) => k.startsWith('token:')).map((k) => k.slice('token:'.length));
    if (!credentials || ids.length === 0) return;
    credentials.live(ids).then(
      (live) => {
        for (const id of ids) if (!live.has(id)) closeAll(`token:${id}`, 'token revoked or expired');
      },
      (err: unknown) => log.warn({ err }, 'rechecking the tokens of open sockets failed'),
    );
  }, options.recheckIntervalMs ?? 5000);
  recheck.unref();

  const poolOf = (ctx: { extra: Connection }): UpstreamPool => {
    let pool = pools.get(ctx);
    if (!pool) {
      const socket = ctx.extra.socket;
      pool = new UpstreamPool(socketImpl, options.upstreamConnectTimeoutMs ?? 5000, ctx.extra.caller!, options.assertions, (code, reason) => socket.close(code, reason));
      pools.set(ctx, pool);
    }
    return pool;
  };

  const format = (error: GraphQLError): GraphQLFormattedError[] => {
    const original = error.originalError;
    if (original instanceof UpstreamErrors) return original.errors.map((e) => formatError(e, e));
    const source = original instanceof GraphQLError ? original : error;
    return [formatError(source.toJSON(), source)];
  };

  /** Parses, validates, authorizes and plans one subscribe payload: a route, or the errors that reject it. */
  const plan = (payload: SubscribePayload, caller: Caller): Route | GraphQLError[] => {
    const { schema, apiSchema, scopeMap, endpoints, planner } = current;
    let document: DocumentNode;
    try {
      document = parseLimited(payload.query, limits);
    } catch (err) {
      const e = err as GraphQLError;
      return [new GraphQLError(e.message, { source: e.source, positions: e.positions, extensions: { code: 'GRAPHQL_PARSE_FAILED', status: 400 } })];
    }
    const invalid = validate(schema, document, rules);
    if (invalid.length > 0) {
      return invalid.map((e) => new GraphQLError(e.message, {
        nodes: e.nodes,
        extensions: { ...e.extensions, code: 'GRAPHQL_VALIDATION_FAILED', status: 400 },
      }));
    }
    const operationName = payload.operationName ?? undefined;
    const operation = getOperationAST(document, operationName);
    if (!operation) {
      return [gatewayError('BAD_REQUEST', operationName
        ? `the document has no operation named "${operationName}"`
        : 'the document has several operations: name the one to run in operationName')];
    }
    if (operation.operation !== 'subscription') {
      return [gatewayError('BAD_REQUEST', `the gateway's WebSocket serves subscriptions only; send this ${operation.operation} over HTTP POST`)];
    }
    const denied = checkScopes(schema, scopeMap, document, operation, caller);
    if (denied) return [denied];
    const variables = payload.variables ?? {};
    const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables);
    if (coerced.errors) {
      return coerced.errors.map((e) => new GraphQLError(e.message, { nodes: e.nodes, extensions: { code: 'BAD_USER_INPUT', status: 400 } }));
    }
    const queryPlan = planner.buildQueryPlan(operationFromDocument(apiSchema, document, { operationName }));
    const node = queryPlan.node;
    if (node?.kind !== 'Subscription') throw new Error(`expected a subscription plan, got ${node?.kind ?? 'none'}`);
    const endpoint = endpoints.get(node.primary.serviceName);
    if (!endpoint) throw new Error(`the plan names subgraph "${node.primary.serviceName}", which has no endpoint`);
    const [root] = operation.selectionSet.selections;
    const field = root?.kind === 'Field' ? (root.alias ?? root.name).value : '(fragment)';
    return {
      field,
      endpoint,
      primary: node.primary,
      rest: node.rest && !(node.rest.kind === 'Sequence' && node.rest.nodes.length === 0) ? node.rest : undefined,
      document,
      operationContext: buildOperationContext({ schema, operationDocument: document, operationName }),
      variables,
      query: payload.query,
      operationName,
    };
  };

  wss.options.maxPayload = Math.min(MAX_MESSAGE_BYTES, limits.maxBodyBytes);
  const gauge = subscriptionGauge('gateway');
  const server = useServer<Record<string, unknown> | undefined, Connection>(
    {
      isProd: true,
      onConnect: async (ctx) => {
        const { socket } = ctx.extra;
        const raw = ctx.connectionParams?.authorization ?? ctx.connectionParams?.Authorization;
        let accepted: AcceptedCredential;
        try {
          accepted = await options.authenticate(typeof raw === 'string' ? raw : undefined);
        } catch (err) {
          socket.close(closeCodes.unauthenticated, (err as Error).message.slice(0, 120));
          return false;
        }
        const key = credentialKey(accepted.caller);
        const open = sockets.get(key) ?? new Set<WebSocket>();
        if (open.size >= maxConnections) {
          socket.close(closeCodes.tooManyConnections, `too many connections: at most ${maxConnections} per credential`);
          return false;
        }
        open.add(socket);
        sockets.set(key, open);
        ctx.extra.caller = accepted.caller;
        ctx.extra.credential = key;
        socket.once('close', () => {
          open.delete(socket);
          if (open.size === 0 && sockets.get(key) === open) sockets.delete(key);
          clearTimeout(ctx.extra.expiryTimer);
        });
        if (accepted.expiresAt !== undefined) {
          ctx.extra.expiryTimer = setTimeout(() => socket.close(closeCodes.unauthenticated, 'credential expired'), Math.max(0, accepted.expiresAt - Date.now()));
          ctx.extra.expiryTimer.unref();
        }
        return true;
      },
      onSubscribe: (ctx, _id, payload) => {
        try {
          if (Object.keys(ctx.subscriptions).length > maxSubscriptions) {
            return [gatewayError('BAD_REQUEST', `too many subscriptions on this socket: at most ${maxSubscriptions}; complete one or open another connection`)];
          }
          const route = plan(payload, ctx.extra.caller!);
          if (Array.isArray(route)) return route;
          const routeContext: RouteContext = { route, pool: poolOf(ctx), shared: current.shared };
          return {
            schema: current.schema,
            document: route.document,
            operationName: route.operationName,
            variableValues: route.variables,
            contextValue: routeContext,
          };
        } catch (err) {
          return [new GraphQLError('planning the subscription failed', { originalError: err as Error })];
        }
      },
      subscribe: (args) => {
        const { route, pool, shared } = args.contextValue as RouteContext;
        return new RoutedSubscription(route, pool, shared);
      },
      onOperation: (ctx, id, _payload, args, result) => {
        gauge.opened(ctx, id, args, result);
        return undefined;
      },
      onComplete: (ctx, id) => gauge.closed(ctx, id),
      onNext: (_ctx, _id, _payload, _args, result) => ({
        ...(result.data !== undefined ? { data: result.data } : {}),
        ...(result.errors?.length ? { errors: result.errors.flatMap(format) } : {}),
      }),
      onError: (_ctx, _id, _payload, errors) => errors.flatMap(format),
      onClose: (ctx) => {
        pools.get(ctx)?.close();
        pools.delete(ctx);
      },
    },
    wss,
  );

  return {
    reload(graph) {
      current = prepare(graph);
    },
    async dispose() {
      clearInterval(recheck);
      unsubscribeRevoked?.();
      // Close frames (1001) go out first: closing the links completes their subscriptions, and a
      // client must read "the gateway went away", never a `complete` of a stream that did not end.
      const closing = server.dispose();
      for (const pool of pools.values()) pool.close();
      pools.clear();
      await closing;
    },
  };
}
