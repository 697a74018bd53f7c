import { httpSubscriptionsPlugin } from './httpSubscriptions';
import { serveEventStream, wantsEventStream } from './sseSubscriptions';
import { Supergraph } from '@apollo/federation-internals';
import { ApolloGateway } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { isLoopback, MCP_PATH, UPLOADS_PATH, type Caller } from '@keelson/schema';
import { armor, healthRoute, readScopeMap, scopePlugin, serveGraphQL, undeclaredRootFields, type CallerContext, type Logger, type MeshSecurity, type ScopeMap } from '@keelson/service';
import { buildSchema, type GraphQLSchema } from 'graphql';
import type { IncomingMessage } from 'node:http';
import { acceptDeviceConnection, anonymousCaller, authenticateRequest, type CredentialCheck } from './auth/credentials';
import { supergraphForPlanning } from './auth/securityFeatures';
import { CACHEABLE } from './cachePolicy';
import { EntityCache } from './entityCache';
import { responseCachePlugin } from './responseCache';
import { coalescePlugin } from './coalesce';
import { installResultShaping } from './resultShaping';
import { createGatewayErrorFormatter } from './errors';
import { graphiqlRoutes, loadGraphiQL } from './graphiql';
import { MCP_SUBGRAPH, mcpProxy } from './mcpProxy';
import { UPLOADS_SUBGRAPH, uploadsProxy } from './uploadsProxy';
import { subgraphFetcher, type SubgraphFetcher } from './subgraphFetcher';
import { resolveSubgraphEndpoints, SubgraphDataSource } from './subgraphEndpoints';
import { useSubscriptionRouter, type SubscriptionRouter, type SubscriptionRouterOptions } from './subscriptionRouter';

export interface GatewayOptions {
  /** The composed supergraph (`schema/supergraph.graphql`). */
  supergraphSdl: string;
  /** @default 127.0.0.1 */
  host?: string;
  /** 0 picks a free port. @default 4000 */
  port?: number;
  /** Serve HTTPS and WSS with this certificate chain and key (PEM). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /**
   * Device mode (KEELSON_TLS_CLIENT_CA, with `tls`): the CA of enrolled devices. Off loopback every
   * connection must present a certificate it issued (refused at the handshake otherwise) and stands
   * for that device, while it is enrolled and not revoked; loopback keeps bearer credentials.
   */
  clientCa?: string | Buffer;
  /**
   * The proxy in front that terminates TLS (KEELSON_TLS_TERMINATED_BY). Without `tls` or this, a
   * non-loopback `host` refuses to start: bearer tokens would cross the network in clear.
   */
  tlsTerminatedBy?: string;
  /** Authentication mode, the assertion key, Host/Origin allowlists and request limits. */
  security: MeshSecurity;
  /** Who a credential stands for; required unless `security.auth` is `off`. */
  credentials?: CredentialCheck;
  /**
   * Subgraph URLs by subgraph name, overriding those recorded in the supergraph's `@join__graph`
   * directives (tests and `npm start` use free ports). A name the supergraph lacks is an error.
   */
  subgraphUrls?: Record<string, string>;
  /**
   * The entity cache (`KEELSON_GATEWAY_CACHE`): subgraph answers kept per caller and dropped by the
   * event log's NOTIFY on this database (see `EntityCache`). Absent: every fetch goes to its subgraph.
   */
  cache?: { databaseUrl: string; maxEntries?: number; maxBytes?: number; maxResponseBytes?: number };
  /**
   * Identical queries in flight share one execution (`KEELSON_GATEWAY_COALESCE`, see `coalescePlugin`);
   * with `cache`, only queries that read nothing it keeps. @default true
   */
  coalesce?: boolean;
  /**
   * Who shapes a query's result from its fetches' answers (`KEELSON_GATEWAY_SHAPING`, see
   * `resultShaping.ts`): the gateway's own, or Apollo's. Process-wide: the last gateway started in a
   * process sets it. @default 'keelson'
   */
  shaping?: 'keelson' | 'apollo';
  /** Tuning of the subscription router (see `SubscriptionRouterOptions`). */
  subscriptions?: Pick<
    SubscriptionRouterOptions,
    'upstreamConnectTimeoutMs' | 'maxQueuedEvents' | 'maxSubscriptionsPerSocket' | 'maxConnectionsPerCredential' | 'recheckIntervalMs'
  >;
  log: Logger;
}

export interface RunningGateway {
  /**
   * Serves `supergraphSdl` from now on: queries and new subscriptions are planned against it while
   * open subscriptions stay open on the graph they began with. An SDL that does not build is
   * refused (the error is thrown) and the graph in force stays.
   */
  reload(supergraphSdl: string): Promise<void>;
  /** http://host:port/graphql */
  url: string;
  /** ws://host:port/graphql */
  wsUrl: string;
  port: number;
  /** The entity cache, when on (tests read its state). */
  cache?: EntityCache;
  stop(): Promise<void>;
}

/**
 * The supergraph's scope requirements, with every root field that declares none made to need
 * `admin`: an undeclared field fails closed, never open.
 */
function enforcedScopes(planningSdl: string, log: Logger): ScopeMap {
  const schema = buildSchema(planningSdl, { assumeValidSDL: true });
  const map = readScopeMap(schema);
  const undeclared = undeclaredRootFields(schema, map);
  for (const field of undeclared) map.fields.set(field, { authenticated: true, scopes: [['admin']] });
  if (undeclared.length) log.warn({ fields: undeclared }, 'root fields without a declared scope requirement need admin');
  return map;
}

/**
 * Refuses options the gateway must not start with: plain HTTP off loopback with authentication on
 * (unless a proxy in front terminates TLS), authentication without a credential check, and device
 * mode without TLS and authentication. Returns whether device mode is on.
 */
function checkGatewayOptions(options: GatewayOptions, host: string): boolean {
  // (With authentication off the bind guard refuses any non-loopback address anyway.)
  if (options.security.auth === 'on' && !isLoopback(host) && !options.tls && !options.tlsTerminatedBy) {
    throw new Error(
      `gateway: refusing to serve plain HTTP on ${host}: credentials would cross the network in clear. Set KEELSON_TLS_CERT and ` +
        'KEELSON_TLS_KEY to serve HTTPS, or KEELSON_TLS_TERMINATED_BY=<the proxy> when a proxy in front terminates TLS (README "Put it on a network"); ' +
        'or bind KEELSON_HOST=127.0.0.1.',
    );
  }
  const { security } = options;
  if (security.auth === 'on' && !options.credentials) throw new Error('the gateway needs a credential check while authentication is on');
  const deviceMode = options.clientCa !== undefined;
  if (deviceMode && (!options.tls || security.auth !== 'on')) throw new Error('gateway: device mode (KEELSON_TLS_CLIENT_CA) needs KEELSON_TLS_CERT and KEELSON_TLS_KEY, and authentication on');
  return deviceMode;
}

/** Everything read from one supergraph; a reload builds the next one whole before swapping. */
function gatewayGraph(supergraphSdl: string, options: GatewayOptions, fetcher: SubgraphFetcher['fetcher'], cache?: EntityCache) {
  const { log, security } = options;
  const planningSdl = supergraphForPlanning(supergraphSdl);
  const supergraph = Supergraph.build(planningSdl);
  const scopeMap = enforcedScopes(planningSdl, log);
  const apiSchema = supergraph.apiSchema().toGraphQLJSSchema();
  const endpoints = resolveSubgraphEndpoints(supergraph, options.subgraphUrls);
  const dataSources: Record<string, SubgraphDataSource> = {};
  for (const endpoint of endpoints.values()) dataSources[endpoint.name] = new SubgraphDataSource(endpoint, security.assertions, log, fetcher, cache);
  // The schemas the cache types fetches against: only the subgraphs its policy lists.
  const subgraphSchemas = new Map<string, GraphQLSchema>();
  if (cache) for (const name of Object.keys(CACHEABLE)) {
    const subgraph = supergraph.subgraphs().get(name);
    if (subgraph) subgraphSchemas.set(name, subgraph.schema.toGraphQLJSSchema());
  }
  return { planningSdl, supergraph, scopeMap, apiSchema, endpoints, dataSources, subgraphSchemas };
}

/**
 * The gateway's Apollo Server over `gateway` (not started): armor's limits, CSRF prevention, no
 * batches, masked errors, the scopes of the graph in force (`graph()`) enforced; introspection on a
 * loopback bind only.
 */
function gatewayApollo(
  gateway: ApolloGateway,
  serving: { host: string; security: MeshSecurity; log: Logger; formatError: ReturnType<typeof createGatewayErrorFormatter> },
  graph: () => ReturnType<typeof gatewayGraph>,
  cache: EntityCache | undefined,
  coalesce: boolean,
): ApolloServer<CallerContext> {
  const { security, log, formatError } = serving;
  const introspection = isLoopback(serving.host);
  const protection = armor(security.limits);
  return new ApolloServer<CallerContext>({
    gateway,
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    introspection,
    includeStacktraceInErrorResponses: false,
    validationRules: protection.validationRules,
    parseOptions: protection.parseOptions,
    formatError,
    logger: log,
    // The process owner handles SIGINT/SIGTERM and stops services in order.
    stopOnTerminationSignals: false,
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      httpSubscriptionsPlugin('/graphql'),
      scopePlugin(() => ({ schema: graph().apiSchema, map: graph().scopeMap })),
      ...protection.plugins,
      // Whole responses from the cache when it is on; identical queries in flight share one execution
      // (with the cache, only those that read nothing it keeps).
      ...(cache ? [responseCachePlugin(cache)] : []),
      ...(coalesce ? [coalescePlugin(cache ? { shares: (query) => cache.readsNothingCached(query) } : {})] : []),
    ],
  });
}

/** The subscription router's options over `graph`: the gateway's tuning, limits, assertion key, credential checks and error formatter. */
function subscriptionRouterOptions(
  options: GatewayOptions,
  graph: ReturnType<typeof gatewayGraph>,
  serving: Pick<SubscriptionRouterOptions, 'authenticate' | 'formatError'> & { deviceMode: boolean },
): SubscriptionRouterOptions {
  const { security, log } = options;
  return {
    ...options.subscriptions,
    supergraph: graph.supergraph,
    apiSchema: graph.apiSchema,
    endpoints: graph.endpoints,
    dataSources: graph.dataSources,
    scopeMap: graph.scopeMap,
    limits: security.limits,
    assertions: security.assertions,
    authenticate: serving.authenticate,
    acceptOwnAssertions: serving.deviceMode,
    ...(options.credentials ? { credentials: options.credentials } : {}),
    formatError: serving.formatError,
    log,
  };
}

/**
 * Starts the gateway: Apollo Gateway over the static supergraph for queries and mutations, and on
 * the same port and path a graphql-ws server that routes subscriptions to their owning subgraph.
 * Also serves `GET /health`, GraphiQL at `GET /` (and `/graphiql`, its bundle under `/graphiql/`) and
 * MCP at `/mcp` (forwarded to the ribs subgraph, see `mcpProxy`).
 *
 * Every GraphQL request is authenticated (`authorization: Bearer …` over HTTP, the same value in
 * `connection_init` over WebSocket) unless `security.auth` is `off` (loopback only); scopes
 * declared in the supergraph are enforced before planning; the caller reaches subgraphs as a
 * signed assertion. Host and Origin allowlists, graphql-armor limits, CSRF prevention; batched
 * requests are refused; internal errors are masked while subgraph errors keep their code and status.
 * Introspection is served on a loopback bind only.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const host = options.host ?? '127.0.0.1';
  const deviceMode = checkGatewayOptions(options, host);
  const { log, security } = options;

  const fetcher = subgraphFetcher();
  const cache = options.cache ? new EntityCache({ ...options.cache, log }) : undefined;
  const graphOf = (supergraphSdl: string) => gatewayGraph(supergraphSdl, options, fetcher.fetcher, cache);
  let graph = graphOf(options.supergraphSdl);
  cache?.useSchemas(graph.subgraphSchemas);
  let updateGateway: ((planningSdl: string) => void) | undefined;

  installResultShaping(options.shaping ?? 'keelson');
  const gateway = new ApolloGateway({
    // A function, so a reload can hand Apollo the next supergraph (`update`).
    supergraphSdl: async ({ update }) => {
      updateGateway = update;
      return { supergraphSdl: graph.planningSdl };
    },
    buildService: ({ name }) => {
      const dataSource = graph.dataSources[name];
      if (!dataSource) throw new Error(`no endpoint for subgraph "${name}"`);
      return dataSource;
    },
    logger: log,
  });
  const formatError = createGatewayErrorFormatter(log);
  const apollo = gatewayApollo(gateway, { host, security, log, formatError }, () => graph, cache, options.coalesce !== false);
  const graphiql = graphiqlRoutes(await loadGraphiQL(log));
  const authenticate = async (authorization: string | undefined, request?: IncomingMessage): Promise<{ caller: Caller; expiresAt?: number }> =>
    security.auth === 'off' ? { caller: anonymousCaller } : authenticateRequest(request, authorization, options.credentials!, deviceMode);

  let subscriptionRouter: SubscriptionRouter | undefined;
  /** Where an event stream opens its subscription: this gateway's own WebSocket, on loopback when bound to every address. */
  let ownWsUrl = '';
  const served = await serveGraphQL<CallerContext>({
    name: 'gateway',
    host,
    port: options.port ?? 4000,
    auth: security.auth,
    access: security.access,
    maxBodyBytes: security.limits.maxBodyBytes,
    apollo,
    log,
    authenticate: async (req) => (await authenticate(req.headers.authorization, req)).caller,
    // Subgraph fetches take the caller from the context; nothing in the gateway reads `currentCaller`.
    callerContext: false,
    context: async (_req, caller) => ({ caller }),
    routes: { ...graphiql, '/health': healthRoute('gateway') },
    endpoints: {
      [MCP_PATH]: mcpProxy({ authenticate, ribsUrl: () => graph.endpoints.get(MCP_SUBGRAPH)?.url, assertions: security.assertions, log }),
      [UPLOADS_PATH]: uploadsProxy({ authenticate, sessionsUrl: () => graph.endpoints.get(UPLOADS_SUBGRAPH)?.url, assertions: security.assertions, log }),
    },
    eventStream: async (req, res, body, caller) =>
      wantsEventStream(req) &&
      serveEventStream(req, res, body, {
        wsUrl: ownWsUrl,
        ...(options.tls ? { ca: options.tls.cert } : {}),
        ...(deviceMode ? { assertCaller: () => security.assertions.sign(caller) } : {}),
      }),
    ...(options.tls ? { tls: { ...options.tls, ...(deviceMode ? { clientCa: options.clientCa!, acceptConnection: acceptDeviceConnection } : {}) } } : {}),
    websocket: (wss) => {
      const router = useSubscriptionRouter(wss, subscriptionRouterOptions(options, graph, { authenticate, deviceMode, formatError }));
      subscriptionRouter = router;
      return () => router.dispose();
    },
  });

  await cache?.start(); // until LISTEN is up the cache serves nothing: requests meanwhile reach their subgraphs

  const loopback = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  ownWsUrl = `${options.tls ? 'wss' : 'ws'}://${loopback}:${served.port}/graphql`;

  const reload = async (supergraphSdl: string): Promise<void> => {
    const next = graphOf(supergraphSdl);
    if (!updateGateway) throw new Error('the gateway has not loaded its first supergraph yet');
    graph = next;
    cache?.useSchemas(next.subgraphSchemas);
    updateGateway(next.planningSdl);
    subscriptionRouter?.reload(next);
    log.info({ subgraphs: [...next.endpoints.keys()] }, 'supergraph reloaded');
  };

  const stop = () => served.stop().finally(() => Promise.all([fetcher.close(), cache?.stop()]));
  return { reload, url: served.url, wsUrl: served.wsUrl, port: served.port, ...(cache ? { cache } : {}), stop: async () => void (await stop()) };
}
