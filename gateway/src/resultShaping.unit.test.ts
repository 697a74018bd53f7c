import {
  buildSchema,
  isCompositeType,
  isListType,
  isNonNullType,
  operationFromDocument,
  type Operation,
  type SelectionSet,
  type Type,
} from '@apollo/federation-internals';
import { Kind, parse } from 'graphql';
import { createRequire } from 'node:module';
import { prng } from '../../test/support/prng';
import { apolloComputeResponse, installResultShaping, shapeResponse, type ShapeArgs } from './resultShaping';

/**
 * The gateway's result shaping against Apollo's own `computeResponse`: for operations that use what
 * shaping must honour (aliases, a response name selected twice, inline and named fragments on
 * interfaces and unions, `__typename` and its aliases, `@skip`/`@include` on variables, defaults and
 * literals, non-null fields and list elements, enums, built-in and custom scalars), thousands of
 * generated answers — missing fields, nulls, values of the wrong type, unknown and abstract
 * `__typename`s — and both must give the same data and the same errors, or throw the same.
 */

const SDL = `
  scalar JSON
  scalar DateTime
  enum Status { RUNNING DONE }
  interface Node { id: ID! }
  type Person { name: String }
  type Project implements Node { id: ID! name: String! runs(first: Int): [Run!]! owner: Person tags: [String] score: Float count: Int meta: JSON }
  type Run implements Node { id: ID! status: Status! nodes: [RunNode!] project: Project at: DateTime }
  type RunNode { id: ID! status: Status ok: Boolean }
  union Thing = Project | Run
  type Query { projects: [Project!]! project(id: ID!): Project things: [Thing] node(id: ID!): Node flag: Boolean matrix: [[Int!]]! }
`;
const schema = buildSchema(SDL);

const OPERATIONS: { name: string; text: string; variables: Record<string, unknown>[] }[] = [
  {
    name: 'the deep bench query',
    text: 'query Deep($f: Int) { projects { id runs(first: $f) { id status nodes { id status } project { id name } } } }',
    variables: [{ f: 2 }],
  },
  {
    name: 'aliases and a response name selected twice',
    text: '{ projects { id a: name name ... on Project { name owner { name } } owner { name } o: owner { n: name } } }',
    variables: [{}],
  },
  {
    name: '@skip and @include on variables, defaults and literals',
    text: 'query ($s: Boolean!, $i: Boolean = true) { projects { id name @skip(if: $s) tags @include(if: $i) score @include(if: false) count @skip(if: false) ... on Project @include(if: $s) { meta } } }',
    variables: [{ s: true }, { s: false }, { s: false, i: false }],
  },
  {
    name: 'unions and interfaces, __typename and its alias',
    text: '{ things { __typename ... on Project { id name } ... on Run { id status } ... on Node { id } } node(id: "1") { id t: __typename ... on Run { status at } } }',
    variables: [{}],
  },
  {
    name: 'leaves of every kind, nested lists',
    text: '{ projects { count score meta tags name } flag matrix project(id: "p") { id } }',
    variables: [{}],
  },
  {
    name: 'named fragments',
    text: 'query { projects { ...P } node(id: "r") { ...R } } fragment P on Project { id runs { ...R nodes { ok } } } fragment R on Run { id at status }',
    variables: [{}],
  },
];

const TYPENAMES: unknown[] = ['Project', 'Run', 'RunNode', 'Person', 'Node', 'Thing', 'Status', 'Nope', '', 42];
const LEAVES: unknown[] = ['text', '12', 'RUNNING', 'DONE', 'running', 7, -3, 1.5, Number.NaN, true, false, null, {}, ['x'], 9007199254740993];

/** An answer for `selectionSet` at `type` as the fetches might have merged it: mostly well formed, often not. */
function answer(selectionSet: SelectionSet | undefined, type: Type, next: () => number, depth: number): unknown {
  const pick = <T,>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  if (next() < 0.06) return null;
  if (isNonNullType(type)) return answer(selectionSet, type.ofType, next, depth);
  if (isListType(type)) {
    if (next() < 0.03) return 'not a list';
    return Array.from({ length: Math.floor(next() * 4) }, () => answer(selectionSet, type.ofType, next, depth + 1));
  }
  if (isCompositeType(type)) {
    const object: Record<string, unknown> = {};
    if (next() < 0.5) object.__typename = next() < 0.8 && type.kind === 'ObjectType' ? type.name : pick(TYPENAMES);
    const fill = (set: SelectionSet, at: Type) => {
      for (const selection of set.selections()) {
        if (selection.kind === 'FragmentSelection') {
          fill(selection.selectionSet, selection.element.typeCondition ?? at);
          continue;
        }
        const field = selection.element;
        if (field.name === '__typename' || next() < 0.1) continue;
        object[field.responseName()] = depth > 6 ? null : answer(selection.selectionSet, field.definition.type!, next, depth + 1);
      }
    };
    if (selectionSet) fill(selectionSet, type);
    return object;
  }
  return pick(LEAVES);
}

type Outcome = { data: unknown; errors: { message: string; path: unknown; code: unknown }[] } | { threw: string };

function outcome(shape: (args: ShapeArgs) => { data: unknown; errors: Error[] }, args: ShapeArgs): Outcome {
  try {
    const { data, errors } = shape(args);
    return {
      data: JSON.parse(JSON.stringify(data ?? null)) as unknown,
      errors: errors.map((e) => ({ message: e.message, path: (e as { path?: unknown }).path, code: (e as { extensions?: { code?: unknown } }).extensions?.code })),
    };
  } catch (err) {
    return { threw: (err as Error).message };
  }
}

describe('result shaping: the same answer as Apollo’s computeResponse', () => {
  for (const op of OPERATIONS) {
    it(`${op.name}: 1,500 generated answers`, () => {
      const operation: Operation = operationFromDocument(schema, parse(op.text), { validate: true });
      const root = schema.schemaDefinition.rootType('query')!;
      const kinds = { data: 0, errors: 0, threw: 0 };
      for (let seed = 1; seed <= 1_500; seed++) {
        const next = prng(seed);
        const input = answer(operation.selectionSet, root, next, 0) ?? {};
        const variables = op.variables[seed % op.variables.length];
        const args = { operation, variables, input: input as Record<string, unknown>, introspectionHandling: () => ({ introspected: true }) };
        const apollo = outcome(apolloComputeResponse, args);
        const ours = outcome(shapeResponse, args);
        expect({ seed, ours }).toEqual({ seed, ours: apollo });
        if ('threw' in apollo) kinds.threw += 1;
        else if (apollo.errors.length) kinds.errors += 1;
        else kinds.data += 1;
      }
      // The generated answers reach every outcome: clean data, errors, and a failed assertion.
      expect(kinds.data).toBeGreaterThan(0);
      expect(kinds.errors).toBeGreaterThan(0);
    });
  }

  it('answers a missing input as it is, and bubbles a non-null violation to the root as data null', () => {
    const operation = operationFromDocument(schema, parse('{ projects { id } }'), { validate: true });
    expect(shapeResponse({ operation, input: undefined, introspectionHandling: () => null })).toEqual({ data: undefined, errors: [] });
    const { data, errors } = shapeResponse({ operation, input: { projects: [{ id: null }] }, introspectionHandling: () => null });
    expect(data).toBeNull();
    expect(errors.map((e) => e.message)).toEqual(['Cannot return null for non-nullable field Project.id.']);
  });

  it('answers repeated calls on one operation from what it kept, with the variables of each call', () => {
    const operation = operationFromDocument(schema, parse('query ($s: Boolean!) { projects { id name @skip(if: $s) } }'), { validate: true });
    const input = { projects: [{ id: '1', name: 'a' }] };
    const shaped = (s: boolean) => JSON.parse(JSON.stringify(shapeResponse({ operation, variables: { s }, input, introspectionHandling: () => null }).data)) as unknown;
    expect([shaped(false), shaped(true), shaped(false)]).toEqual([{ projects: [{ id: '1', name: 'a' }] }, { projects: [{ id: '1' }] }, { projects: [{ id: '1', name: 'a' }] }]);
  });
});

describe('installResultShaping', () => {
  // What executeQueryPlan reads at each call: the two modules' exports.
  const gatewayRequire = createRequire(require.resolve('@apollo/gateway'));
  const shaping = gatewayRequire('./resultShaping') as { computeResponse: unknown };
  const internals = gatewayRequire('@apollo/federation-internals') as typeof import('@apollo/federation-internals');
  afterAll(() => installResultShaping('keelson'));

  it("puts the gateway's shaping where executeQueryPlan calls it, and Apollo's back", () => {
    installResultShaping('keelson');
    expect(shaping.computeResponse).toBe(shapeResponse);
    installResultShaping('apollo');
    expect(shaping.computeResponse).toBe(apolloComputeResponse);
  });

  it("builds a client operation once per parsed document and schema, as executeQueryPlan asks (validate: false); other calls are Apollo's", () => {
    const document = parse('query Q { projects { ...P } } fragment P on Project { id }');
    const [op, fragment] = document.definitions;
    // executeQueryPlan wraps the same definition nodes in a new document each request.
    const asExecuted = (s = schema) => internals.operationFromDocument(s, { kind: Kind.DOCUMENT, definitions: [op!, fragment!] }, { validate: false });
    installResultShaping('keelson');
    const first = asExecuted();
    expect(asExecuted()).toBe(first);
    expect(String(first)).toContain('projects');
    // Another schema (a reloaded supergraph), other fragment nodes, a validating call: built anew.
    const reloaded = buildSchema(SDL);
    expect(asExecuted(reloaded)).not.toBe(first);
    const otherFragment = parse('fragment P on Project { id }').definitions[0]!;
    expect(internals.operationFromDocument(schema, { kind: Kind.DOCUMENT, definitions: [op!, otherFragment] }, { validate: false })).not.toBe(first);
    expect(internals.operationFromDocument(schema, document)).not.toBe(internals.operationFromDocument(schema, document));
    installResultShaping('apollo');
    expect(asExecuted()).not.toBe(asExecuted());
  });
});
