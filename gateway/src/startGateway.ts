import { Supergraph } from '@apollo/federation-internals';
import { ApolloGateway } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { isLoopback } from '@keelson/schema';
import { healthRoute, serveGraphQL, type Logger } from '@keelson/service';
import { depthLimitRule } from './depthLimit';
import { createGatewayErrorFormatter } from './errors';
import { explorerRoute } from './explorer';
import { resolveSubgraphEndpoints, SubgraphDataSource } from './subgraphEndpoints';
import { useSubscriptionRouter, type SubscriptionRouterOptions } from './subscriptionRouter';

export interface GatewayOptions {
  /** The composed supergraph (`schema/supergraph.graphql`). */
  supergraphSdl: string;
  /** Anything but loopback needs `insecureBind`. @default 127.0.0.1 */
  host?: string;
  /** 0 picks a free port. @default 4000 */
  port?: number;
  /** Bind a non-loopback host without authentication (logged as a warning). @default false */
  insecureBind?: boolean;
  /**
   * Subgraph URLs by subgraph name, overriding those recorded in the supergraph's `@join__graph`
   * directives (tests and `npm start` use free ports). A name the supergraph lacks is an error.
   */
  subgraphUrls?: Record<string, string>;
  /** The deepest field nesting an operation may select. @default 12 */
  maxDepth?: number;
  /** Tuning of the subscription router (see `SubscriptionRouterOptions`). */
  subscriptions?: Pick<SubscriptionRouterOptions, 'upstreamConnectTimeoutMs' | 'maxBufferedEvents'>;
  log: Logger;
}

export interface RunningGateway {
  /** http://host:port/graphql */
  url: string;
  /** ws://host:port/graphql */
  wsUrl: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts the gateway: Apollo Gateway over the static supergraph for queries and mutations, and on
 * the same port and path a graphql-ws server that routes subscriptions to their owning subgraph.
 * Also serves `GET /health` and the explorer page at `GET /` (and `/explorer`).
 *
 * Refuses a non-loopback host unless `insecureBind` (before anything binds). Introspection is
 * served on loopback only; CSRF prevention is on; batched requests are refused; internal errors
 * are masked while subgraph errors keep their `extensions.code` and `status`.
 */
export async function startGateway(options: GatewayOptions): Promise<RunningGateway> {
  const host = options.host ?? '127.0.0.1';
  const maxDepth = options.maxDepth ?? 12;
  const { log } = options;

  const supergraph = Supergraph.build(options.supergraphSdl);
  const endpoints = resolveSubgraphEndpoints(supergraph, options.subgraphUrls);
  const dataSources: Record<string, SubgraphDataSource> = {};
  for (const endpoint of endpoints.values()) dataSources[endpoint.name] = new SubgraphDataSource(endpoint, log);

  const gateway = new ApolloGateway({
    supergraphSdl: options.supergraphSdl,
    buildService: ({ name }) => {
      const dataSource = dataSources[name];
      if (!dataSource) throw new Error(`no endpoint for subgraph "${name}"`);
      return dataSource;
    },
    logger: log,
  });
  const formatError = createGatewayErrorFormatter(log);
  const introspection = isLoopback(host);
  const apollo = new ApolloServer({
    gateway,
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    introspection,
    includeStacktraceInErrorResponses: false,
    validationRules: [depthLimitRule(maxDepth)],
    formatError,
    logger: log,
    // The process owner handles SIGINT/SIGTERM and stops services in order.
    stopOnTerminationSignals: false,
    plugins: [ApolloServerPluginLandingPageDisabled()],
  });
  const explorer = explorerRoute(introspection);

  const served = await serveGraphQL({
    name: 'gateway',
    host,
    port: options.port ?? 4000,
    insecureBind: options.insecureBind ?? false,
    apollo,
    log,
    context: async () => ({}),
    routes: { '/health': healthRoute('gateway'), '/': explorer, '/explorer': explorer },
    websocket: (wss) => {
      const router = useSubscriptionRouter(wss, { ...options.subscriptions, supergraph, endpoints, dataSources, maxDepth, formatError, log });
      return () => router.dispose();
    },
  });

  return { url: served.url, wsUrl: served.wsUrl, port: served.port, stop: () => served.stop() };
}
