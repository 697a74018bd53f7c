import { composeServices } from '@apollo/composition';
import { Supergraph } from '@apollo/federation-internals';
import { parse } from 'graphql';
import { resolveSubgraphEndpoints } from './subgraphEndpoints';

const FED = 'extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])';

function supergraph(): Supergraph {
  const composed = composeServices([
    { name: 'one', url: 'http://one.internal:4001/graphql', typeDefs: parse(`${FED} type Query { a: Int }`) },
    { name: 'two', url: 'https://two.internal/graphql', typeDefs: parse(`${FED} type Query { b: Int }`) },
  ]);
  if (composed.errors) throw composed.errors[0];
  return Supergraph.build(composed.supergraphSdl);
}

describe('resolveSubgraphEndpoints', () => {
  it('uses the URLs the supergraph records, with the matching WebSocket URL on the same path', () => {
    expect([...resolveSubgraphEndpoints(supergraph()).values()]).toEqual([
      { name: 'one', url: 'http://one.internal:4001/graphql', wsUrl: 'ws://one.internal:4001/graphql' },
      { name: 'two', url: 'https://two.internal/graphql', wsUrl: 'wss://two.internal/graphql' },
    ]);
  });

  it('lets an override replace one subgraph\'s URL', () => {
    const endpoints = resolveSubgraphEndpoints(supergraph(), { two: 'http://127.0.0.1:5555/graphql' });

    expect(endpoints.get('two')).toEqual({ name: 'two', url: 'http://127.0.0.1:5555/graphql', wsUrl: 'ws://127.0.0.1:5555/graphql' });
    expect(endpoints.get('one')?.url).toBe('http://one.internal:4001/graphql');
  });

  it('refuses an override naming no subgraph, listing the ones there are', () => {
    expect(() => resolveSubgraphEndpoints(supergraph(), { three: 'http://x/graphql' })).toThrow(
      'subgraphUrls names "three", which is not a subgraph of the supergraph (it has: one, two)',
    );
  });

  it('refuses a URL that is not http(s)', () => {
    expect(() => resolveSubgraphEndpoints(supergraph(), { one: 'ws://x/graphql' })).toThrow('subgraph "one": expected an http(s) URL, got "ws://x/graphql"');
    expect(() => resolveSubgraphEndpoints(supergraph(), { one: 'not a url' })).toThrow('subgraph "one": "not a url" is not a URL');
  });
});
