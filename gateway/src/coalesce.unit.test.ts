import { ApolloServer } from '@apollo/server';
import type { Caller } from '@keelson/schema';
import { metricsRegistry, type CallerContext } from '@keelson/service';
import { coalescePlugin } from './coalesce';

/**
 * A real Apollo Server whose `value` resolver waits for the test to open a gate: queries sent while
 * one executes overlap it, and how many times the resolver ran is counted.
 */
function testServer(options?: Parameters<typeof coalescePlugin>[0]) {
  let value = 'v1';
  let runs = 0;
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  const server = new ApolloServer<CallerContext>({
    typeDefs: 'type Query { value(x: Int): String! broken: String! } type Mutation { set(to: String!): String! }',
    resolvers: {
      Query: {
        value: async () => {
          runs += 1;
          const read = value;
          await gate;
          return read;
        },
        broken: async () => {
          runs += 1;
          await gate;
          throw new Error('broken');
        },
      },
      Mutation: {
        set: (_: unknown, { to }: { to: string }) => {
          runs += 1;
          return (value = to);
        },
      },
    },
    plugins: [coalescePlugin(options)],
  });
  return {
    server,
    runs: () => runs,
    close: () => {
      gate = new Promise<void>((resolve) => (open = resolve));
    },
    open: () => open(),
  };
}

const caller = (subject: string, scopes = ['read']): Caller => ({ kind: 'token', subject, tokenId: `t-${subject}`, scopes }) as Caller;

async function coalesced(): Promise<number> {
  const metric = metricsRegistry().getSingleMetric('keelson_gateway_coalesced_total');
  return metric ? (await metric.get()).values.reduce((sum, v) => sum + v.value, 0) : 0;
}

describe('identical queries in flight share one execution', () => {
  let t: ReturnType<typeof testServer>;
  const send = (query: string, who: Caller, variables: Record<string, unknown> = {}) =>
    t.server.executeOperation({ query, variables }, { contextValue: { caller: who } }).then((r) => (r.body.kind === 'single' ? r.body.singleResult : undefined));

  beforeEach(async () => {
    t = testServer();
    await t.server.start();
  });
  afterEach(() => t.server.stop());

  it('answers queries identical to one executing with its answer; another caller, variables or text executes on its own', async () => {
    const before = await coalesced();
    t.close();
    const a = caller('a');
    const first = send('{ value }', a);
    await new Promise((r) => setImmediate(r));
    const same = [send('{ value }', a), send('{ value }', a)];
    const others = [send('{ value }', caller('b')), send('{ value }', caller('a', ['read', 'write'])), send('query ($x: Int) { value(x: $x) }', a, { x: 1 }), send('{ value  }', a)];
    await new Promise((r) => setImmediate(r));
    t.open();
    const answers = await Promise.all([first, ...same, ...others]);
    expect(answers.map((r) => r?.data)).toEqual(Array.from({ length: 7 }, () => ({ value: 'v1' })));
    expect(t.runs()).toBe(5);
    expect((await coalesced()) - before).toBe(2);
    // Once answered, the same query executes again.
    await send('{ value }', a);
    expect(t.runs()).toBe(6);
  });

  it('never joins an execution that began before a mutation answered, and never shares a mutation', async () => {
    const a = caller('a');
    t.close();
    const first = send('{ value }', a);
    await new Promise((r) => setImmediate(r));
    // The mutation answers while the first read still executes (it read v1).
    expect((await send('mutation { set(to: "v2") }', a))?.data).toEqual({ set: 'v2' });
    const after = send('{ value }', a);
    await new Promise((r) => setImmediate(r));
    t.open();
    expect((await first)?.data).toEqual({ value: 'v1' });
    expect((await after)?.data).toEqual({ value: 'v2' });
    const mutations = await Promise.all([send('mutation { set(to: "v3") }', a), send('mutation { set(to: "v3") }', a)]);
    expect(mutations.map((r) => r?.data)).toEqual([{ set: 'v3' }, { set: 'v3' }]);
    expect(t.runs()).toBe(5);
  });

  it('shares no answer with errors: each waiting query executes on its own', async () => {
    const a = caller('a');
    t.close();
    const first = send('{ broken }', a);
    await new Promise((r) => setImmediate(r));
    const second = send('{ broken }', a);
    await new Promise((r) => setImmediate(r));
    t.open();
    const answers = await Promise.all([first, second]);
    expect(answers.map((r) => r?.errors?.[0]?.message)).toEqual(['broken', 'broken']);
    expect(t.runs()).toBe(2);
  });

  it('shares only the queries `shares` allows (the entity cache\'s: those reading nothing it keeps)', async () => {
    await t.server.stop();
    const asked: string[] = [];
    t = testServer({ shares: (query) => (asked.push(query), query.includes('"x":1')) });
    await t.server.start();
    const a = caller('a');
    const burst = async (variables: Record<string, unknown>) => {
      const before = t.runs();
      t.close();
      const first = send('query ($x: Int) { value(x: $x) }', a, variables);
      await new Promise((r) => setImmediate(r));
      const second = send('query ($x: Int) { value(x: $x) }', a, variables);
      await new Promise((r) => setImmediate(r));
      t.open();
      expect((await Promise.all([first, second])).map((r) => r?.data)).toEqual([{ value: 'v1' }, { value: 'v1' }]);
      return t.runs() - before;
    };
    expect(await burst({ x: 1 })).toBe(1);
    expect(await burst({ x: 2 })).toBe(2);
    // Asked with the query's key (text, operation, variables, caller), once per request.
    expect(asked).toHaveLength(4);
    expect(asked[0]).toContain('value(x: $x)');
    expect(asked[0]).toContain('t-a');
  });
});
