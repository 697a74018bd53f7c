import type { ApolloServerPlugin } from '@apollo/server';
import { gatewayError } from './errors';

/**
 * Subscriptions go over WebSocket (`graphql-transport-ws` at the GraphQL path), through the
 * subscription router. One sent over HTTP (plain JSON, or Apollo's multipart subscription accept
 * header) is refused before anything runs — a `BAD_REQUEST` (400) naming the way in — instead of
 * reaching the gateway's executor, which answered 500 and logged a stack.
 */
export function httpSubscriptionsPlugin(path: string): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation }) {
          if (operation?.operation !== 'subscription') return;
          const error = gatewayError('BAD_REQUEST', `subscriptions are served over WebSocket (the graphql-transport-ws protocol) at ${path}, not over HTTP`, {
            transport: 'graphql-transport-ws',
          });
          error.extensions.http = { status: 400 };
          throw error;
        },
      };
    },
  };
}
