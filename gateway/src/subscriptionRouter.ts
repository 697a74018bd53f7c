import type { Supergraph } from '@apollo/federation-internals';
import type { GraphQLDataSource } from '@apollo/gateway';
import { closeCodes, type Caller } from '@keelson/schema';
import { armor, countRefusal, subscriptionGauge, type AssertionKey, type Logger, type RequestLimits } from '@keelson/service';
import { GraphQLError, specifiedRules, type ExecutionArgs, type ExecutionResult, type GraphQLFormattedError, type GraphQLSchema, type ValidationRule } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import { useServer, type Extra } from 'graphql-ws/use/ws';
import type { WebSocket, WebSocketServer } from 'ws';
import type { IncomingMessage } from 'node:http';
import { credentialKey, isLoopbackPeer, type AcceptedCredential, type CredentialCheck } from './auth/credentials';
import type { ScopeMap } from '@keelson/service';
import { gatewayError, type GatewayErrorFormatter } from './errors';
import { RoutedSubscription, type RouteContext, type Shared } from './routedSubscription';
import type { SubgraphEndpoint } from './subgraphEndpoints';
import { SubscriptionPlanner } from './subscriptionPlan';
import { UpstreamErrors, UpstreamPool, upstreamSocket, type ConnectionLinks } from './upstreamPool';

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
  /**
   * Who a `connection_init`'s `authorization` stands for on the socket opened by `request`
   * (anonymous when authentication is off; the enrolled device off loopback in device mode).
   */
  authenticate(authorization: string | undefined, request: IncomingMessage): Promise<AcceptedCredential>;
  /**
   * Accepts a caller assertion signed with `assertions` in `connection_init` from a loopback peer:
   * the gateway's own event-stream bridge, for a caller it has authenticated already (a device).
   */
  acceptOwnAssertions?: boolean;
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

/** What the router keeps on each graphql-ws connection. */
type Connection = Extra & {
  caller?: Caller;
  /** Under which key the socket is counted and revoked. */
  credential?: string;
  expiryTimer?: NodeJS.Timeout;
} & Record<PropertyKey, unknown>;

/** The router's errors formatted (masked) for clients: upstream errors each, others as graphql-js made them. */
function routerErrorFormat(formatError: GatewayErrorFormatter): (error: GraphQLError) => GraphQLFormattedError[] {
  return (error) => {
    const original = error.originalError;
    if (original instanceof UpstreamErrors) return original.errors.map((e) => formatError(e, e));
    const source = original instanceof GraphQLError ? original : error;
    return [formatError(source.toJSON(), source)];
  };
}

/** Everything planning reads from one supergraph; swapped whole by `reload`. */
function plannedGraph(graph: RouterGraph, options: SubscriptionRouterOptions, rules: ValidationRule[], serializeEvent: Shared['serializeEvent']) {
  return {
    schema: graph.apiSchema,
    planner: new SubscriptionPlanner({ schema: graph.apiSchema, supergraph: graph.supergraph, scopeMap: graph.scopeMap, endpoints: graph.endpoints }, options.limits, rules),
    shared: {
      supergraphSchema: graph.supergraph.schema.toGraphQLJSSchema(),
      apiSchema: graph.supergraph.apiSchema(),
      dataSources: graph.dataSources,
      maxQueuedEvents: options.maxQueuedEvents ?? 1000,
      serializeEvent,
      log: options.log,
      feeds: new Map(),
    } satisfies Shared,
  };
}

/**
 * The open sockets by credential key (`token:<id>` for API tokens), closed 4401 when their token is
 * revoked, or found revoked or expired by a recheck every few seconds. `stop` ends both watches.
 */
function credentialSockets(options: SubscriptionRouterOptions): { sockets: Map<string, Set<WebSocket>>; stop(): void } {
  const { log } = options;
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
  return {
    sockets,
    stop() {
      clearInterval(recheck);
      unsubscribeRevoked?.();
    },
  };
}

/**
 * graphql-ws's `onConnect`: authenticates `connection_init` (its `authorization`, or on loopback the
 * gateway's own assertion) and counts the socket under its credential; refuses with 4401, or 4429
 * past `maxConnections`. The socket closes 4401 when its credential expires.
 */
async function acceptConnection(
  ctx: { connectionParams?: Readonly<Record<string, unknown>> | undefined; extra: Connection },
  options: SubscriptionRouterOptions,
  sockets: Map<string, Set<WebSocket>>,
  maxConnections: number,
): Promise<boolean> {
  const { socket } = ctx.extra;
  const raw = ctx.connectionParams?.authorization ?? ctx.connectionParams?.Authorization;
  const assertion = ctx.connectionParams?.assertion;
  let accepted: AcceptedCredential;
  try {
    accepted =
      options.acceptOwnAssertions && typeof assertion === 'string' && isLoopbackPeer(ctx.extra.request.socket.remoteAddress)
        ? { caller: await options.assertions.verify(assertion) }
        : await options.authenticate(typeof raw === 'string' ? raw : undefined, ctx.extra.request);
  } catch (err) {
    countRefusal('gateway', 'unauthenticated');
    socket.close(closeCodes.unauthenticated, (err as Error).message.slice(0, 120));
    return false;
  }
  const key = credentialKey(accepted.caller);
  const open = sockets.get(key) ?? new Set<WebSocket>();
  if (open.size >= maxConnections) {
    countRefusal('gateway', 'connections');
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
}

/**
 * graphql-ws's `onSubscribe`: refuses one subscription more than `maxSubscriptions` on the socket,
 * plans it against `graph` (answering the planner's refusals, scope refusals counted), and runs a
 * planned one as a routed subscription over its caller's upstream links.
 */
function planSubscription(
  ctx: { subscriptions: object; extra: Connection },
  id: string,
  payload: SubscribePayload,
  graph: ReturnType<typeof plannedGraph>,
  links: () => ConnectionLinks,
  maxSubscriptions: number,
): ExecutionArgs | readonly GraphQLError[] {
  try {
    if (Object.keys(ctx.subscriptions).length > maxSubscriptions) {
      countRefusal('gateway', 'subscriptions');
      return [gatewayError('BAD_REQUEST', `too many subscriptions on this socket: at most ${maxSubscriptions}; complete one or open another connection`)];
    }
    const route = graph.planner.plan(payload, ctx.extra.caller!);
    if (Array.isArray(route)) {
      if (route.some((e) => e.extensions?.requiredScopes)) countRefusal('gateway', 'scope');
      return route;
    }
    const routeContext: RouteContext = { route, links: links(), shared: graph.shared, client: { socket: ctx.extra.socket, id } };
    return {
      schema: graph.schema,
      document: route.document,
      operationName: route.operationName,
      variableValues: route.variables,
      contextValue: routeContext,
    };
  } catch (err) {
    return [new GraphQLError('planning the subscription failed', { originalError: err as Error })];
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
  const { formatError, limits } = options;
  const rules: ValidationRule[] = [...specifiedRules, ...armor(limits).validationRules];
  const maxSubscriptions = options.maxSubscriptionsPerSocket ?? 100;
  const maxConnections = options.maxConnectionsPerCredential ?? 50;
  const format = routerErrorFormat(formatError);
  /** A completed event's `next` payload, errors formatted (masked) for clients. */
  const serializeEvent = (result: ExecutionResult): string =>
    JSON.stringify({
      ...(result.data !== undefined ? { data: result.data } : {}),
      ...(result.errors?.length ? { errors: result.errors.flatMap(format) } : {}),
    });
  let current = plannedGraph(options, options, rules, serializeEvent);
  const connectTimeoutMs = options.upstreamConnectTimeoutMs ?? 5000;
  // One link per caller and subgraph, shared by all of that caller's client connections.
  const upstream = new UpstreamPool(upstreamSocket(connectTimeoutMs), connectTimeoutMs, options.assertions);
  const connections = new Map<object, ConnectionLinks>();
  const credentialWatch = credentialSockets(options);

  const linksOf = (ctx: { extra: Connection }): ConnectionLinks => {
    let links = connections.get(ctx);
    if (!links) {
      links = upstream.connection(ctx.extra.caller!);
      connections.set(ctx, links);
    }
    return links;
  };

  wss.options.maxPayload = Math.min(MAX_MESSAGE_BYTES, limits.maxBodyBytes);
  const gauge = subscriptionGauge('gateway');
  const server = useServer<Record<string, unknown> | undefined, Connection>(
    {
      isProd: true,
      onConnect: (ctx) => acceptConnection(ctx, options, credentialWatch.sockets, maxConnections),
      onSubscribe: (ctx, id, payload) => planSubscription(ctx, id, payload, current, () => linksOf(ctx), maxSubscriptions),
      subscribe: (args) => {
        const { route, links, shared, client } = args.contextValue as RouteContext;
        return new RoutedSubscription(route, links, shared, client);
      },
      onOperation: (ctx, id, _payload, args, result) => {
        gauge.opened(ctx, id, args, result);
        return undefined;
      },
      onComplete: (ctx, id) => gauge.closed(ctx, id),
      onError: (_ctx, _id, _payload, errors) => errors.flatMap(format),
      onClose: (ctx) => {
        connections.get(ctx)?.close();
        connections.delete(ctx);
      },
    },
    wss,
  );

  return {
    reload(graph) {
      current = plannedGraph(graph, options, rules, serializeEvent);
    },
    async dispose() {
      credentialWatch.stop();
      // Close frames (1001) go out first: closing the links completes their subscriptions, and a
      // client must read "the gateway went away", never a `complete` of a stream that did not end.
      const closing = server.dispose();
      for (const links of connections.values()) links.close();
      connections.clear();
      upstream.close();
      await closing;
    },
  };
}
