import type { ApolloServerOptionsWithGateway, BaseContext } from '@apollo/server';
import { countCompiledAnswer } from '@keelson/service';
import { execute, GraphQLError, type DocumentNode, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/**
 * How a subgraph executes what it is sent over HTTP: `compiled` runs queries through graphql-jit,
 * `graphql-js` runs everything through graphql-js' `execute`. Subscriptions (graphql-ws) always
 * run through graphql-js.
 */
export type SubgraphExecution = 'compiled' | 'graphql-js';

/** Apollo Server 5's gateway seam (`@apollo/server-gateway-interface` 2), as @apollo/server types it. */
type ApolloGateway = ApolloServerOptionsWithGateway<BaseContext>['gateway'];
type GatewayExecutor = NonNullable<Awaited<ReturnType<ApolloGateway['load']>>['executor']>;
type SchemaListener = Parameters<ApolloGateway['onSchemaLoadOrUpdate']>[0];

/** The seam plus how many queries it compiled (a test reads it to see the cache hold). */
export interface CompiledExecution extends ApolloGateway {
  readonly compilations: number;
}

/**
 * Serves one fixed schema through Apollo Server's gateway seam, executing queries with graphql-jit.
 *
 * Why: a federated fetch (`_entities` → `Project.runs` for 30 projects) spent most of the runs
 * subgraph's CPU in graphql-js' per-field execution and the garbage it leaves (issue 14); a query
 * compiled once to a JavaScript function cut that CPU about 1.7× (bench/runsAlone.ts). Apollo still
 * parses, validates and formats errors: only execution changes, and clients see graphql-js' answers.
 *
 * - A query is compiled once per (document, operation name). Apollo's document store hands back the
 *   same DocumentNode for the same query text, so a WeakMap on the document holds the compilations
 *   exactly as long as Apollo keeps the document.
 * - Mutations, anything graphql-jit refuses to compile, and requests it answers without data
 *   (variables that do not coerce: no resolver ran) go through graphql-js' `execute` as before, so
 *   their errors are graphql-js' own (Apollo recognises those as BAD_USER_INPUT).
 * - A query answered with more than one error is answered again by graphql-js, with the same
 *   context (its DataLoaders hold what the first pass read). graphql-jit runs every field and then
 *   nulls what a non-null error propagates to, reporting every error; graphql-js stops an object's
 *   fields at the first such error, so it reports fewer, in its own order. One error nulls the same
 *   fields either way. Errors are the exception, so the second pass is rare.
 * - graphql-jit's field errors carry their thrown error as `originalError` but no AST nodes and no
 *   extensions when the thrown error had none; each is remade as graphql-js' `locatedError` would
 *   make it, so Apollo and the kit's error formatter see the same error either way.
 * - Each answer is counted by engine (`keelson_compiled_executor_answers_total{service,by}`): how
 *   much runs compiled, and that it runs at all.
 *
 * @param service the subgraph's name, the counter's `service` label
 */
export function compiledExecution(schema: GraphQLSchema, service: string): CompiledExecution {
  const compiled = new WeakMap<DocumentNode, Map<string | undefined, CompiledQuery | null>>();
  const listeners = new Set<SchemaListener>();
  let compilations = 0;

  const compiledFor = (document: DocumentNode, operationName: string | undefined): CompiledQuery | null => {
    let byName = compiled.get(document);
    if (!byName) compiled.set(document, (byName = new Map()));
    let query = byName.get(operationName);
    if (query === undefined) {
      try {
        const result = compileQuery(schema, document, operationName);
        query = isCompiledQuery(result) ? result : null;
      } catch {
        query = null;
      }
      if (query) compilations++;
      byName.set(operationName, query);
    }
    return query;
  };

  const executor: GatewayExecutor = async (requestContext) => {
    const { document, request, operation, context } = requestContext;
    const viaGraphQLJs = () => {
      countCompiledAnswer(service, 'graphql-js');
      return execute({ schema, document, contextValue: context, variableValues: request.variables, operationName: request.operationName });
    };
    const query = operation?.operation === 'query' ? compiledFor(document, request.operationName) : null;
    if (!query) return viaGraphQLJs();
    const result = await query.query(undefined, context, request.variables);
    if (result.data === undefined || (result.errors?.length ?? 0) > 1) return viaGraphQLJs();
    countCompiledAnswer(service, 'graphql-jit');
    return result.errors ? { ...result, errors: result.errors.map(asLocatedError) } : result;
  };

  return {
    get compilations() {
      return compilations;
    },
    async load() {
      // A subgraph has no supergraph: the schema it serves is its API schema.
      for (const listener of listeners) listener({ apiSchema: schema, coreSupergraphSdl: '' });
      return { executor };
    },
    onSchemaLoadOrUpdate(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async stop() {
      listeners.clear();
    },
  };
}

/** graphql-jit's field error as graphql-js' `locatedError` makes it: extensions from the thrown error, else `{}`. */
function asLocatedError(error: GraphQLError): GraphQLError {
  const located = new GraphQLError(error.message, { path: error.path, originalError: error.originalError ?? undefined });
  // graphql-js derives `locations` from AST nodes, which graphql-jit does not keep; it computed them already.
  (located as { locations?: GraphQLError['locations'] }).locations = error.locations;
  return located;
}
