import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginInlineTraceDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ASSERTION_HEADER, ASSERTION_PARAM, closeCodes, scopes, type Caller } from '@keelson/schema';
import { armor, checkScopes, countRefusal, healthRoute, parseLimited, readScopeMap, scopePlugin, serveGraphQL, subscriptionGauge, type Logger, type MeshSecurity, type ScopeMap, type Served } from '@keelson/service';
import { getOperationAST, GraphQLError, specifiedRules, validate, type ExecutionArgs, type GraphQLFormattedError, type GraphQLSchema, type ValidationRule } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import type { WebSocketServer } from 'ws';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { compiledExecution, type SubgraphExecution } from './compiledExecutor';
import { createErrorFormatter, meshGraphQLError } from './errors';
import { subscribeWithFreshContext } from './freshSubscribe';
import { RequestLoaders } from './loaders';
import { auditPlugin } from './auditPlugin';
import type { AuditSink } from '@keelson/platform';

/** What every resolver sees: per-request loaders, the asserted caller, plus the subgraph's own services. */
export interface SubgraphContext {
  loaders: RequestLoaders;
  /** Who the gateway (or a mesh service) says is calling. */
  caller: Caller;
}

export interface StartSubgraphOptions<TContext extends SubgraphContext> {
  name: string;
  schema: GraphQLSchema;
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Authentication, allowlists and limits (the gateway's assertion key above all). */
  security: MeshSecurity;
  log: Logger;
  /** Builds the per-request (or per-subscription) context around fresh loaders and the caller. */
  context: (base: SubgraphContext, req?: IncomingMessage) => TContext | Promise<TContext>;
  /** Runs after the servers close (release pools, listeners). */
  onStop?: () => Promise<void>;
  /**
   * How queries over HTTP execute: `compiled` (graphql-jit, compiled once per document; mutations
   * and what it cannot compile still run through graphql-js) or `graphql-js` (everything through
   * graphql-js, as bench/runsAlone.ts compares). Subscriptions always run through graphql-js.
   * @default 'compiled'
   */
  execution?: SubgraphExecution;
  /** Handlers of any method at exact paths beside GraphQL (see `SubgraphRouteHandler`). */
  endpoints?: Record<string, SubgraphRouteHandler>;
  /** Where every mutation this subgraph answers is recorded (`AuditLog` over its database). */
  audit?: AuditSink;
}

/**
 * A handler of every method at one path of a subgraph (the ribs' `/mcp`): `caller()` verifies the
 * request's assertion as a GraphQL request's is (it throws a MeshError UNAUTHENTICATED), `body()`
 * reads the bounded body. The handler shapes its own answers, refusals included.
 */
export type SubgraphRouteHandler = (req: IncomingMessage, res: ServerResponse, request: { caller(): Promise<Caller>; body(): Promise<string> }) => Promise<void>;

/** The caller when authentication is off and a request carries no assertion (loopback only). */
const anonymous: Caller = { subject: 'anonymous (KEELSON_AUTH=off)', kind: 'service', scopes: [...scopes] };

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The subgraph's Apollo Server (not started): compiled or graphql-js execution, its scopes enforced, mutations audited. */
function subgraphApollo<TContext extends SubgraphContext>(
  opts: StartSubgraphOptions<TContext>,
  formatError: ReturnType<typeof createErrorFormatter>,
  protection: ReturnType<typeof armor>,
  scopeMap: ScopeMap,
): ApolloServer<TContext> {
  return new ApolloServer<TContext>({
    ...((opts.execution ?? 'compiled') === 'compiled' ? { gateway: compiledExecution(opts.schema, opts.name) } : { schema: opts.schema }),
    formatError,
    csrfPrevention: true,
    allowBatchedHttpRequests: false,
    // Only the gateway and mesh services reach a subgraph, all with an assertion: introspection is
    // theirs (schema tooling reads `_service { sdl }`, which the assertion guards as well).
    introspection: true,
    includeStacktraceInErrorResponses: false,
    validationRules: protection.validationRules,
    parseOptions: protection.parseOptions,
    // The process owner handles SIGINT/SIGTERM and stops services in order.
    stopOnTerminationSignals: false,
    // No @cacheControl hints anywhere: the cache-control plugin's per-field hook would only make
    // Apollo wrap every resolver (a cost per field of every list a federated fetch returns).
    plugins: [
      ApolloServerPluginLandingPageDisabled(),
      ApolloServerPluginInlineTraceDisabled(),
      ApolloServerPluginCacheControlDisabled(),
      scopePlugin<TContext>(() => ({ schema: opts.schema, map: scopeMap })),
      ...protection.plugins,
      ...(opts.audit ? [auditPlugin<TContext>(opts.audit)] : []),
    ],
  });
}

/**
 * Checks one subscription before it runs: parsed within the limits, valid against `rules`, a
 * subscription (this socket serves nothing else) and within the caller's scopes. Returns the
 * errors to answer, or the execution arguments (without a context: graphql-ws fills it).
 */
function checkedSubscription(
  opts: Pick<StartSubgraphOptions<SubgraphContext>, 'name' | 'schema' | 'security'>,
  scopeMap: ScopeMap,
  rules: readonly ValidationRule[],
  payload: SubscribePayload,
  caller: Caller,
): GraphQLError[] | ExecutionArgs {
  let document;
  try {
    document = parseLimited(payload.query, opts.security.limits);
  } catch (err) {
    return [new GraphQLError((err as Error).message, { extensions: { code: 'GRAPHQL_PARSE_FAILED', status: 400 } })];
  }
  const invalid = validate(opts.schema, document, rules);
  if (invalid.length > 0) {
    return invalid.map((e) => new GraphQLError(e.message, { nodes: e.nodes, extensions: { ...e.extensions, code: 'GRAPHQL_VALIDATION_FAILED', status: 400 } }));
  }
  const operation = getOperationAST(document, payload.operationName);
  if (operation && operation.operation !== 'subscription') {
    return [meshGraphQLError('FORBIDDEN', `this WebSocket serves subscriptions only; send a ${operation.operation} over HTTP`)];
  }
  const denied = operation ? checkScopes(opts.schema, scopeMap, document, operation, caller) : undefined;
  if (denied) {
    countRefusal(opts.name, 'scope');
    return [denied];
  }
  // No contextValue: graphql-ws fills it from the server's `context`.
  return { schema: opts.schema, document, operationName: payload.operationName, variableValues: payload.variables };
}

/**
 * Serves the subgraph's subscriptions over graphql-ws on `wss`: a connection authenticated by its
 * `connection_init` assertion (else closed 4401), each subscription checked before it runs and
 * counted while open, errors formatted as over HTTP. Returns the server's dispose function.
 */
function serveSubgraphSubscriptions<TContext extends SubgraphContext>(
  wss: WebSocketServer,
  opts: StartSubgraphOptions<TContext>,
  authenticate: (assertion: string | undefined) => Promise<Caller>,
  check: (payload: SubscribePayload, caller: Caller) => GraphQLError[] | ExecutionArgs,
  format: (errors: readonly GraphQLError[]) => GraphQLFormattedError[],
): () => Promise<void> | void {
  const gauge = subscriptionGauge(opts.name);
  const server = useServer<Record<string, unknown>, { caller?: Caller }>(
    {
      schema: opts.schema,
      onConnect: async (ctx) => {
        const assertion = ctx.connectionParams?.[ASSERTION_PARAM];
        try {
          ctx.extra.caller = await authenticate(typeof assertion === 'string' ? assertion : undefined);
          return true;
        } catch (err) {
          countRefusal(opts.name, 'unauthenticated');
          ctx.extra.socket.close(closeCodes.unauthenticated, (err as Error).message.slice(0, 120));
          return false;
        }
      },
      onSubscribe: (ctx, _id, payload) => check(payload, ctx.extra.caller!),
      context: async (ctx) => opts.context({ loaders: new RequestLoaders(), caller: ctx.extra.caller! }),
      subscribe: (args) => subscribeWithFreshContext(args, async () => opts.context({ loaders: new RequestLoaders(), caller: (args.contextValue as SubgraphContext).caller })),
      onOperation: (ctx, id, _payload, args, result) => {
        gauge.opened(ctx, id, args, result);
        return undefined;
      },
      onComplete: (ctx, id) => gauge.closed(ctx, id),
      onError: (_ctx, _id, _payload, errors) => format(errors),
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors ? { ...result, errors: format(result.errors) } : undefined,
    },
    wss,
  );
  return () => server.dispose();
}

/**
 * Serves one subgraph: Apollo Server 5 for queries and mutations and graphql-ws for subscriptions
 * on the same port, with errors shaped by one formatter for both transports.
 *
 * A subgraph is never an entry point: every request (health checks aside, `_service` included)
 * needs the caller assertion the gateway or a mesh service signed — over HTTP in the
 * `x-keelson-assertion` header, over WebSocket in `connection_init`'s `assertion` (else close 4401).
 * Its WebSocket serves subscriptions only. graphql-armor's limits apply as at the gateway.
 */
export async function startSubgraph<TContext extends SubgraphContext>(opts: StartSubgraphOptions<TContext>): Promise<Served> {
  const { security } = opts;
  const formatError = createErrorFormatter(opts.log);
  const protection = armor(security.limits);
  // The subgraph's own @requiresScopes, checked against the asserted caller as the gateway checks
  // the supergraph's: a caller reaching this port directly is held to the same rules.
  const scopeMap = readScopeMap(opts.schema);
  const apollo = subgraphApollo(opts, formatError, protection, scopeMap);
  const rules = [...specifiedRules, ...protection.validationRules];
  const format = (errors: readonly GraphQLError[]): GraphQLFormattedError[] =>
    errors.map((e) => formatError(e.toJSON(), e));

  const authenticate = async (assertion: string | undefined): Promise<Caller> => {
    if (security.auth === 'off' && !assertion) return anonymous;
    return security.assertions.verify(assertion);
  };

  const served = await serveGraphQL<TContext>({
    name: opts.name,
    host: opts.host,
    port: opts.port,
    auth: security.auth,
    access: security.access,
    maxBodyBytes: security.limits.maxBodyBytes,
    apollo,
    log: opts.log,
    authenticate: (req) => authenticate(headerValue(req.headers[ASSERTION_HEADER])),
    // A scraper has no assertion: its bearer API token, checked against the token table.
    metricsAuthenticate: async (req) => {
      const assertion = headerValue(req.headers[ASSERTION_HEADER]);
      if (assertion || !security.apiTokens) return authenticate(assertion);
      return security.apiTokens.authenticate(headerValue(req.headers.authorization));
    },
    context: async (req, caller) => opts.context({ loaders: new RequestLoaders(), caller }, req),
    routes: { '/health': healthRoute(opts.name) },
    endpoints: Object.fromEntries(
      Object.entries(opts.endpoints ?? {}).map(([path, handler]) => [
        path,
        (req: IncomingMessage, res: ServerResponse, body: () => Promise<string>) => handler(req, res, { caller: () => authenticate(headerValue(req.headers[ASSERTION_HEADER])), body }),
      ]),
    ),
    websocket: (wss) =>
      serveSubgraphSubscriptions(wss, opts, authenticate, (payload, caller) => checkedSubscription(opts, scopeMap, rules, payload, caller), format),
  });

  return {
    ...served,
    async stop() {
      await served.stop();
      // The entries of the last answers, before the pool they are written through closes.
      await opts.audit?.flush();
      await opts.onStop?.();
    },
  };
}

/** Where and how a subgraph process serves: the part of its start options startSubgraph takes as they are. */
export type SubgraphServing = Pick<StartSubgraphOptions<SubgraphContext>, 'host' | 'port' | 'security' | 'log' | 'audit'>;

/**
 * Serves a domain subgraph: `schema` on `serving`'s host and port, the domain's `services` in every
 * request's context, `onStop` once the servers closed.
 */
export function serveDomain<TServices>(
  name: string,
  serving: SubgraphServing,
  schema: GraphQLSchema,
  services: TServices,
  onStop: () => Promise<void>,
  endpoints?: Record<string, SubgraphRouteHandler>,
): Promise<Served> {
  return startSubgraph<SubgraphContext & { services: TServices }>({
    name,
    schema,
    host: serving.host,
    port: serving.port,
    security: serving.security,
    log: serving.log,
    context: (base) => ({ ...base, services }),
    onStop,
    ...(endpoints ? { endpoints } : {}),
    ...(serving.audit ? { audit: serving.audit } : {}),
  });
}

/** What starts a subgraph process: its database, and where and how it serves. */
export interface SubgraphStartOptions extends SubgraphServing {
  databaseUrl: string;
}
