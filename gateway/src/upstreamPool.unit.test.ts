import type { Caller } from '@keelson/schema';
import { linkKey } from './upstreamPool';

describe('which subscriptions may share an upstream link', () => {
  const reviews = { name: 'reviews', url: 'http://127.0.0.1:4002/graphql', wsUrl: 'ws://127.0.0.1:4002/graphql' };
  const caller: Caller = { subject: 'token:ci', kind: 'token', scopes: ['read'], tokenId: 't1' };

  it('those of one caller to one subgraph, however the caller object was built', () => {
    const rebuilt: Caller = { tokenId: 't1', scopes: ['read'], kind: 'token', subject: 'token:ci' };

    expect(linkKey(reviews, rebuilt)).toBe(linkKey(reviews, caller));
  });

  it.each<[string, Caller]>([
    ['another token of the same name and scopes', { ...caller, tokenId: 't2' }],
    ['the same token id with other scopes', { ...caller, scopes: ['read', 'write'] }],
    ['another subject', { ...caller, subject: 'token:other' }],
    ['another kind', { ...caller, kind: 'jwt' }],
    ['the same caller with no token id', { subject: caller.subject, kind: caller.kind, scopes: caller.scopes }],
    ['a field the assertion may carry one day', { ...caller, tenant: 'b' } as Caller],
  ])('never those of %s', (_name, other) => {
    expect(linkKey(reviews, other)).not.toBe(linkKey(reviews, caller));
  });

  it('never across subgraphs, nor to one subgraph at another address (a reload)', () => {
    expect(linkKey({ ...reviews, name: 'catalog' }, caller)).not.toBe(linkKey(reviews, caller));
    expect(linkKey({ ...reviews, wsUrl: 'ws://127.0.0.1:5002/graphql' }, caller)).not.toBe(linkKey(reviews, caller));
  });
});
