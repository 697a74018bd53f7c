import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginInlineTraceDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { isLoopback } from '@keelson/schema';
import { healthRoute, serveGraphQL, type Logger, type Served } from '@keelson/service';
import { GraphQLError, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { IncomingMessage } from 'node:http';
import { createErrorFormatter } from './errors';
import { subscribeWithFreshContext } from './freshSubscribe';
import { RequestLoaders } from './loaders';

/** What every resolver sees: per-request loaders plus the subgraph's own services. */
export interface SubgraphContext {
  loaders: RequestLoaders;
}

export interface StartSubgraphOptions<TContext extends SubgraphContext> {
  name: string;
  schema: GraphQLSchema;
  host: string;
  /** 0 picks a free port. */
  port: number;
  insecureBind?: boolean;
  log: Logger;
  /** Builds the per-request (or per-subscription) context around fresh loaders. */
  context: (base: SubgraphContext, req?: IncomingMessage) => TContext | Promise<TContext>;
  /** Runs after the servers close (release pools, listeners). */
  onStop?: () => Promise<void>;
}

/**
 * Serves one subgraph: Apollo Server 5 for queries and mutations and graphql-ws for subscriptions
 * on the same port, with errors shaped by one formatter for both transports.
 */
export async function startSubgraph<TContext extends SubgraphContext>(opts: StartSubgraphOptions<TContext>): Promise<Served> {
  const formatError = createErrorFormatter(opts.log);
  const apollo = new ApolloServer<TContext>({
    schema: opts.schema,
    formatError,
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    introspection: isLoopback(opts.host),
    includeStacktraceInErrorResponses: false,
    // The process owner handles SIGINT/SIGTERM and stops services in order.
    stopOnTerminationSignals: false,
    plugins: [ApolloServerPluginLandingPageDisabled(), ApolloServerPluginInlineTraceDisabled()],
  });
  const format = (errors: readonly GraphQLError[]): GraphQLFormattedError[] =>
    errors.map((e) => formatError(e.toJSON(), e));

  const served = await serveGraphQL<TContext>({
    name: opts.name,
    host: opts.host,
    port: opts.port,
    insecureBind: opts.insecureBind,
    apollo,
    log: opts.log,
    context: async (req) => opts.context({ loaders: new RequestLoaders() }, req),
    routes: { '/health': healthRoute(opts.name) },
    websocket: (wss) => {
      const server = useServer<Record<string, unknown>>(
        {
          schema: opts.schema,
          context: async () => opts.context({ loaders: new RequestLoaders() }),
          subscribe: (args) => subscribeWithFreshContext(args, async () => opts.context({ loaders: new RequestLoaders() })),
          onError: (_ctx, _id, _payload, errors) => format(errors),
          onNext: (_ctx, _id, _payload, _args, result) =>
            result.errors ? { ...result, errors: format(result.errors) } : undefined,
        },
        wss,
      );
      return () => server.dispose();
    },
  });

  return {
    ...served,
    async stop() {
      await served.stop();
      await opts.onStop?.();
    },
  };
}
