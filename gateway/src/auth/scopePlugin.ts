import type { ApolloServerPlugin } from '@apollo/server';
import type { Caller } from '@keelson/schema';
import type { GraphQLSchema } from 'graphql';
import { checkScopes, type ScopeMap } from './scopeRequirements';

/** What every gateway request carries: the authenticated caller. */
export interface GatewayContext {
  caller: Caller;
}

/**
 * Enforces the supergraph's `@authenticated` / `@requiresScopes` on every operation once it is
 * resolved and before the gateway plans it: an unmet requirement is FORBIDDEN (403) naming the
 * field and the scope it needs, and nothing reaches a subgraph. `current` names the supergraph in
 * force (a reload replaces it).
 */
export function scopePlugin(current: () => { schema: GraphQLSchema; map: ScopeMap }): ApolloServerPlugin<GatewayContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ document, operation, contextValue }) {
          // Apollo Server resolves the operation before this hook; without one it already failed.
          if (!operation) return;
          const { schema, map } = current();
          const denied = checkScopes(schema, map, document, operation, contextValue.caller);
          if (denied) throw denied;
        },
      };
    },
  };
}
