import type { ApolloServerPlugin } from '@apollo/server';
import { gatewayError } from './errors';

/**
 * Subscriptions go over WebSocket (`graphql-transport-ws` at the GraphQL path), through the
 * subscription router, or over Server-Sent Events (`accept: text/event-stream`, see
 * sseSubscriptions.ts), which never reaches Apollo Server. One sent over plain HTTP (JSON, or Apollo's
 * multipart subscription accept header) is refused before anything runs — a `BAD_REQUEST` (400)
 * naming the ways in — instead of reaching the gateway's executor, which answered 500 and logged a stack.
 */
export function httpSubscriptionsPlugin(path: string): ApolloServerPlugin {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ operation }) {
          if (operation?.operation !== 'subscription') return;
          const error = gatewayError('BAD_REQUEST', `subscriptions are served over WebSocket (the graphql-transport-ws protocol) at ${path}, or as Server-Sent Events there (accept: text/event-stream, the graphql-sse protocol); not as a plain or multipart HTTP response`, {
            transport: 'graphql-transport-ws',
          });
          error.extensions.http = { status: 400 };
          throw error;
        },
      };
    },
  };
}
