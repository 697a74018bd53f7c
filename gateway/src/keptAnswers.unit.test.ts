import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import type { Caller } from '@keelson/schema';
import type { CallerContext } from '@keelson/service';
import { queryKeyOf } from './keptAnswers';

// The response cache and in-flight sharing both key a request by `queryKeyOf`; with both on, the key
// (a JSON text of the query, its variables and the caller) is worked out once per request.
describe('queryKeyOf', () => {
  const caller = { kind: 'token', subject: 'ana', tokenId: 't-ana', scopes: ['read'] } as Caller;

  function serverAsking(times: number, seen: (string | undefined)[]) {
    const plugin: ApolloServerPlugin<CallerContext> = {
      async requestDidStart() {
        return {
          async responseForOperation(request) {
            seen.push(queryKeyOf(request));
            return null;
          },
        };
      },
    };
    return new ApolloServer<CallerContext>({
      typeDefs: 'type Query { value: String! } type Mutation { set: String! }',
      resolvers: { Query: { value: () => 'v' }, Mutation: { set: () => 's' } },
      plugins: Array.from({ length: times }, () => plugin),
    });
  }

  it('is worked out once per request for every plugin that asks, and again for the next request', async () => {
    const seen: (string | undefined)[] = [];
    const server = serverAsking(2, seen);
    let serialized = 0;
    // A variable the operation does not declare is still part of the key; counting its serialization counts the keys made.
    const variables = { extra: { toJSON: () => ((serialized += 1), 'x') } };
    try {
      await server.executeOperation({ query: '{ value }', variables }, { contextValue: { caller } });
      expect(serialized).toBe(1);
      expect(seen).toHaveLength(2);
      expect(seen[0]).toEqual(expect.stringContaining('{ value }'));
      expect(seen[1]).toBe(seen[0]);
      await server.executeOperation({ query: '{ value }', variables }, { contextValue: { caller } });
      expect(serialized).toBe(2);
      expect(seen[2]).toBe(seen[0]);
    } finally {
      await server.stop();
    }
  });

  it('is undefined for a mutation and for a request without a caller, asked twice', async () => {
    const seen: (string | undefined)[] = [];
    const server = serverAsking(2, seen);
    try {
      await server.executeOperation({ query: 'mutation { set }' }, { contextValue: { caller } });
      await server.executeOperation({ query: '{ value }' }, { contextValue: {} as CallerContext });
      expect(seen).toEqual([undefined, undefined, undefined, undefined]);
    } finally {
      await server.stop();
    }
  });
});
