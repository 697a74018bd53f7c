import { ApolloServer } from '@apollo/server';
import { ASSERTION_HEADER, MeshError } from '@keelson/schema';
import { silentLogger, type Served } from '@keelson/service';
import {
  GraphQLBoolean,
  GraphQLEnumType,
  GraphQLID,
  GraphQLInt,
  GraphQLInterfaceType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  GraphQLUnionType,
} from 'graphql';
import { security, testService } from '../../../test/support/auth';
import { answeredBy, type AnsweredBy } from '../../../test/support/compiledAnswers';
import { compiledExecution, type SubgraphExecution } from './compiledExecutor';
import { meshGraphQLError } from './errors';
import { DateTimeScalar, JSONScalar } from './scalars';
import { RequestLoaders } from './loaders';
import { startSubgraph } from './startSubgraph';

// A schema with what the mesh's subgraphs use, where the runs subgraph has no example: argument
// defaults, an interface resolved by isTypeOf, a union by resolveType, enums with internal values,
// DateTime and JSON in and out, and resolvers that fail in each way the kit's formatter tells apart.
type Item = { kind: 'note'; id: string; text: string; at: Date; meta: unknown } | { kind: 'task'; id: string; done: boolean; state: string };
const items: Item[] = [
  { kind: 'note', id: 'n1', text: 'first', at: new Date('2026-01-02T03:04:05.678Z'), meta: { tags: ['a'], n: 1.5, nil: null } },
  { kind: 'task', id: 't1', done: false, state: 'open' },
  { kind: 'note', id: 'n2', text: 'second', at: new Date('2026-02-01T00:00:00.000Z'), meta: null },
  { kind: 'task', id: 't2', done: true, state: 'done' },
];

const State = new GraphQLEnumType({ name: 'State', values: { OPEN: { value: 'open' }, DONE: { value: 'done' } } });
const Node: GraphQLInterfaceType = new GraphQLInterfaceType({ name: 'Node', fields: { id: { type: new GraphQLNonNull(GraphQLID) } } });
const Note = new GraphQLObjectType({
  name: 'Note',
  interfaces: [Node],
  isTypeOf: (v: Item) => v.kind === 'note',
  fields: { id: { type: new GraphQLNonNull(GraphQLID) }, text: { type: new GraphQLNonNull(GraphQLString) }, at: { type: new GraphQLNonNull(DateTimeScalar) }, meta: { type: JSONScalar } },
});
const Task = new GraphQLObjectType({
  name: 'Task',
  interfaces: [Node],
  isTypeOf: (v: Item) => v.kind === 'task',
  fields: { id: { type: new GraphQLNonNull(GraphQLID) }, done: { type: new GraphQLNonNull(GraphQLBoolean) }, state: { type: new GraphQLNonNull(State) } },
});
const ItemUnion = new GraphQLUnionType({ name: 'Item', types: [Note, Task], resolveType: (v: Item) => (v.kind === 'note' ? 'Note' : 'Task') });

const schema = new GraphQLSchema({
  types: [Note, Task],
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      nodes: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Node))), args: { limit: { type: GraphQLInt, defaultValue: 2 } }, resolve: (_r, a: { limit: number }) => items.slice(0, a.limit) },
      items: { type: new GraphQLList(ItemUnion), args: { limit: { type: GraphQLInt, defaultValue: 3 } }, resolve: async (_r, a: { limit: number }) => items.slice(0, a.limit) },
      echo: {
        type: new GraphQLNonNull(JSONScalar),
        args: { at: { type: new GraphQLNonNull(DateTimeScalar) }, meta: { type: JSONScalar }, state: { type: State, defaultValue: 'done' }, word: { type: GraphQLString, defaultValue: 'hi' } },
        resolve: (_r, a: { at: Date; meta: unknown; state: string; word: string }) => ({ at: a.at.toISOString(), meta: a.meta, state: a.state, word: a.word }),
      },
      meshFailure: { type: GraphQLString, resolve: () => Promise.reject(new MeshError('NOT_FOUND', 'no note "n9"; expected one of n1, n2', { id: 'n9' })) },
      graphQLFailure: { type: GraphQLString, resolve: () => { throw meshGraphQLError('CONFLICT', 'the note is locked by "someone"'); } },
      plainFailure: { type: GraphQLString, resolve: () => { throw new Error('connection terminated'); } },
      databaseDown: { type: GraphQLString, resolve: () => { throw Object.assign(new Error('QueryFailedError'), { driverError: Object.assign(new Error('the database system is shutting down'), { code: '57P03' }) }); } },
      badDate: { type: DateTimeScalar, resolve: () => 'not a date' },
      badState: { type: new GraphQLNonNull(State), resolve: () => 'weird' },
    },
  }),
  mutation: new GraphQLObjectType({ name: 'Mutation', fields: { touch: { type: new GraphQLNonNull(GraphQLString), args: { id: { type: new GraphQLNonNull(GraphQLID) } }, resolve: (_r, a: { id: string }) => `touched ${a.id}` } } }),
});

interface Answer {
  status: number;
  body: { data?: unknown; errors?: { message: string; path?: unknown[]; locations?: unknown[]; extensions?: Record<string, unknown> }[] };
}

describe('compiledExecution', () => {
  const served = {} as Record<SubgraphExecution, Served>;

  beforeAll(async () => {
    for (const execution of ['compiled', 'graphql-js'] as const) {
      served[execution] = await startSubgraph({ name: 'kit-test', schema, host: '127.0.0.1', port: 0, security, log: silentLogger(), execution, context: (base) => base });
    }
  });
  afterAll(async () => {
    for (const s of Object.values(served)) await s?.stop();
  });

  const post = async (execution: SubgraphExecution, query: string, variables?: Record<string, unknown>): Promise<Answer> => {
    const res = await fetch(served[execution].url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [ASSERTION_HEADER]: await security.assertions.sign(testService) },
      body: JSON.stringify({ query, variables }),
    });
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  };
  /** Sends to both, asserts the answers are equal and which engine of the compiled executor answered. */
  const both = async (query: string, variables?: Record<string, unknown>, by: AnsweredBy = 'graphql-jit'): Promise<Answer> => {
    const compiled = await answeredBy('kit-test', () => post('compiled', query, variables));
    expect(compiled.by).toBe(by);
    const reference = await answeredBy('kit-test', () => post('graphql-js', query, variables));
    expect(reference.by).toBe('none');
    expect(compiled.answer).toEqual(reference.answer);
    return compiled.answer;
  };

  it('resolves interfaces by isTypeOf and unions by resolveType alike, with argument defaults and enum values', async () => {
    const answer = await both(`{ nodes { __typename id ... on Task { state done } } items { __typename ... on Note { text at meta } ... on Task { state } } more: nodes(limit: 4) { id } }`);
    expect(answer.body).toEqual({
      data: {
        nodes: [{ __typename: 'Note', id: 'n1' }, { __typename: 'Task', id: 't1', state: 'OPEN', done: false }],
        items: [
          { __typename: 'Note', text: 'first', at: '2026-01-02T03:04:05.678Z', meta: { tags: ['a'], n: 1.5, nil: null } },
          { __typename: 'Task', state: 'OPEN' },
          { __typename: 'Note', text: 'second', at: '2026-02-01T00:00:00.000Z', meta: null },
        ],
        more: [{ id: 'n1' }, { id: 't1' }, { id: 'n2' }, { id: 't2' }],
      },
    });
  });

  it('parses DateTime, JSON and enum arguments alike, from literals and from variables, defaults applied', async () => {
    const literal = await both(`{ echo(at: "2026-03-04T05:06:07Z", meta: { a: [1, "two", null] }, state: OPEN) }`);
    expect(literal.body).toEqual({ data: { echo: { at: '2026-03-04T05:06:07.000Z', meta: { a: [1, 'two', null] }, state: 'open', word: 'hi' } } });
    await both(`query($at: DateTime!, $meta: JSON, $state: State = OPEN) { echo(at: $at, meta: $meta, state: $state) }`, { at: '2026-03-04T05:06:07+02:00', meta: { deep: { x: true } } });
  });

  it('rejects a DateTime or enum that does not parse alike: in a literal (validation), in a variable (BAD_USER_INPUT, 400)', async () => {
    const literal = await both(`{ echo(at: "yesterday") }`, undefined, 'none');
    expect(literal.body.errors?.[0].extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    for (const variables of [{ at: 'yesterday' }, { at: '2026-03-04T05:06:07Z', state: 'MAYBE' }, {}]) {
      // graphql-jit answers without data (no resolver ran): graphql-js answers with its own errors.
      const answer = await both(`query($at: DateTime!, $state: State) { echo(at: $at, state: $state) }`, variables, 'graphql-js');
      expect(answer.status).toBe(400);
      expect(answer.body.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    }
  });

  it('keeps a thrown MeshError and a thrown GraphQLError their codes, and masks anything else, alike', async () => {
    // Four errors: graphql-js answers again, in its own order.
    const answer = await both(`{ meshFailure graphQLFailure plainFailure badDate nodes(limit: 1) { id } }`, undefined, 'graphql-js');
    expect(answer.status).toBe(200);
    const byPath = (errors: Answer['body']['errors']) => [...(errors ?? [])].sort((a, b) => String(a.path).localeCompare(String(b.path)));
    expect(answer.body.data).toEqual({ meshFailure: null, graphQLFailure: null, plainFailure: null, badDate: null, nodes: [{ id: 'n1' }] });
    expect(byPath(answer.body.errors)).toEqual([
      { message: 'Internal server error', path: ['badDate'], locations: [{ line: 1, column: 43 }], extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } },
      { message: 'the note is locked by "someone"', path: ['graphQLFailure'], locations: [{ line: 1, column: 15 }], extensions: { code: 'CONFLICT', status: 409 } },
      { message: 'no note "n9"; expected one of n1, n2', path: ['meshFailure'], locations: [{ line: 1, column: 3 }], extensions: { id: 'n9', code: 'NOT_FOUND', status: 404 } },
      { message: 'Internal server error', path: ['plainFailure'], locations: [{ line: 1, column: 30 }], extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } },
    ]);
    // One error each: answered by the compiled query itself, not by graphql-js again.
    for (const field of ['meshFailure', 'graphQLFailure', 'plainFailure', 'badDate']) await both(`{ ${field} }`);
  });

  it('says SERVICE_UNAVAILABLE (retryable) for a database that is not answering, alike, and masks nothing else', async () => {
    const answer = await both(`{ databaseDown plainFailure }`, undefined, 'graphql-js');
    expect(answer.body.errors?.map((e) => [e.path, e.extensions?.code])).toEqual([
      [['databaseDown'], 'SERVICE_UNAVAILABLE'],
      [['plainFailure'], 'INTERNAL_SERVER_ERROR'],
    ]);
    expect(answer.body.errors?.[0]?.message).toMatch(/^Service unavailable: /);
    const alone = await both(`{ databaseDown }`);
    expect(alone.body.errors?.[0]?.extensions).toEqual({ code: 'SERVICE_UNAVAILABLE', status: 503 });
  });

  it('nulls the whole data alike when a non-null root field fails', async () => {
    const answer = await both(`{ badState nodes { id } }`);
    expect(answer.body).toEqual({ data: null, errors: [{ message: 'Internal server error', path: ['badState'], locations: [{ line: 1, column: 3 }], extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 } }] });
  });

  it('runs mutations alike (through graphql-js)', async () => {
    expect((await both(`mutation { touch(id: "n1") }`, undefined, 'graphql-js')).body).toEqual({ data: { touch: 'touched n1' } });
  });

  it('compiles a query once per document and operation name, and never a mutation', async () => {
    const execution = compiledExecution(schema, 'kit-cache-test');
    const apollo = new ApolloServer({ gateway: execution });
    await apollo.start();
    try {
      const run = async (query: string, operationName?: string) => {
        const res = await apollo.executeOperation({ query, operationName }, { contextValue: { loaders: new RequestLoaders(), caller: testService } });
        return res.body.kind === 'single' ? res.body.singleResult : undefined;
      };
      const two = 'query A { nodes { id } } query B { items { __typename } }';
      for (let i = 0; i < 3; i++) {
        expect((await run(two, 'A'))?.data).toEqual({ nodes: [{ id: 'n1' }, { id: 't1' }] });
        expect((await run(two, 'B'))?.data).toEqual({ items: [{ __typename: 'Note' }, { __typename: 'Task' }, { __typename: 'Note' }] });
      }
      expect(execution.compilations).toBe(2);
      await run('{ nodes { id } }');
      expect(execution.compilations).toBe(3);
      expect((await run('mutation { touch(id: "x") }'))?.data).toEqual({ touch: 'touched x' });
      expect(execution.compilations).toBe(3);
    } finally {
      await apollo.stop();
    }
  });
});
