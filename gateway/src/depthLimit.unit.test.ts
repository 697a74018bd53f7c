import { buildSchema, parse, validate } from 'graphql';
import { depthLimitRule } from './depthLimit';

const schema = buildSchema(`
  type Query { node: Node }
  type Node { id: ID! child: Node }
`);

function check(query: string, maxDepth = 3) {
  return validate(schema, parse(query), [depthLimitRule(maxDepth)]);
}

describe('depthLimitRule', () => {
  it('accepts an operation exactly at the limit', () => {
    expect(check('{ node { child { id } } }')).toEqual([]);
  });

  it('rejects one level deeper, naming the depth, the deepest path (by alias) and the limit', () => {
    const [error, ...more] = check('query Q { node { child { deep: child { id } } } }');

    expect(more).toEqual([]);
    expect(error!.message).toBe('operation "Q" nests fields 4 deep (at node.child.deep.id); the gateway accepts at most 3');
    expect(error!.extensions).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED', status: 400, maxDepth: 3, depth: 4 });
  });

  it('counts named and inline fragments where they are spread', () => {
    expect(check('{ node { ...F } } fragment F on Node { child { ... on Node { child { id } } } }')).toHaveLength(1);
    expect(check('{ node { ...F } } fragment F on Node { child { id } }')).toEqual([]);
  });

  it('measures a fragment spread many times once (no blow-up on wide documents)', () => {
    const spreads = Array.from({ length: 200 }, (_, i) => `a${i}: node { ...F }`).join(' ');
    const started = Date.now();

    expect(check(`{ ${spreads} } fragment F on Node { child { id } }`)).toEqual([]);
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('does not recurse forever on a fragment cycle (NoFragmentCyclesRule reports it)', () => {
    expect(() => check('{ node { ...A } } fragment A on Node { child { ...B } } fragment B on Node { child { ...A } }')).not.toThrow();
  });

  it('does not count introspection, which nests type references deeply by design', () => {
    expect(check('{ __schema { types { fields { type { ofType { ofType { ofType { name } } } } } } } }', 2)).toEqual([]);
  });

  it('checks each operation of a document on its own', () => {
    const errors = check('query Shallow { node { id } } query Deep { node { child { child { id } } } }');

    expect(errors.map((e) => e.message)).toEqual([expect.stringMatching(/^operation "Deep" nests fields 4 deep/)]);
  });
});
