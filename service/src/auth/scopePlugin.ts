import type { ApolloServerPlugin } from '@apollo/server';
import type { Caller } from '@keelson/schema';
import type { GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { checkScopes, type ScopeMap } from './scopeRequirements';

/** What every request's context carries for the check: the authenticated caller. */
export interface CallerContext {
  caller: Caller;
}

/**
 * Enforces a schema's `@authenticated` / `@requiresScopes` on every operation once it is resolved
 * and before anything executes: an unmet requirement is FORBIDDEN (403) naming the field and the
 * scope it needs. The gateway checks the supergraph before it plans (nothing reaches a subgraph);
 * each subgraph checks its own schema against the caller of the assertion, so a caller that reaches a
 * subgraph port directly is held to the same rules. `current` names the schema in force (a gateway
 * reload replaces it).
 *
 * The answer depends on the operation and the caller's scopes alone, and Apollo Server hands every
 * request of one query text the same parsed document: a positive answer is kept per operation and
 * scope set (until the supergraph changes), so a repeated query is not walked again. A refusal is
 * never kept (its message names the caller).
 */
export function scopePlugin<TContext extends CallerContext = CallerContext>(current: () => { schema: GraphQLSchema; map: ScopeMap }): ApolloServerPlugin<TContext> {
  /** Scope sets (joined) found to allow an operation, on the graph `allowedOn`. */
  let allowed = new WeakMap<OperationDefinitionNode, Set<string>>();
  let allowedOn: GraphQLSchema | undefined;
  const hooks: Awaited<ReturnType<NonNullable<ApolloServerPlugin<TContext>['requestDidStart']>>> = {
    async didResolveOperation({ document, operation, contextValue }) {
      // Apollo Server resolves the operation before this hook; without one it already failed.
      if (!operation) return;
      const { schema, map } = current();
      if (allowedOn !== schema) {
        allowed = new WeakMap();
        allowedOn = schema;
      }
      const { caller } = contextValue;
      const scopes = caller.scopes.join(' ');
      let known = allowed.get(operation);
      if (known?.has(scopes)) return;
      const denied = checkScopes(schema, map, document, operation, caller);
      if (denied) throw denied;
      if (!known) allowed.set(operation, (known = new Set()));
      known.add(scopes);
    },
  };
  return {
    async requestDidStart() {
      return hooks;
    },
  };
}
