import { composeServices } from '@apollo/composition';
import { buildSubgraphSchema } from '@apollo/subgraph';
import { startGateway, type RunningGateway } from '@keelson/gateway';
import { startSubgraph } from '@keelson/kit';
import { silentLogger, type Served } from '@keelson/service';
import { buildMemorySchema } from '@keelson/subgraph-memory';
import gql from 'graphql-tag';
import { gqlData } from './support/client';
import { startTestMesh, type TestMesh } from './support/mesh';

/**
 * Stands in for the sessions subgraph, which does not exist yet: it owns `session(id)` and
 * `sessions(ids)` and knows nothing of history, so the gateway must fetch `history` from memory
 * through `_entities` — the federation path `session(id) { history { content } }` takes.
 */
const SESSIONS_STUB_SDL = `
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.7", import: ["@key"])
  type Query { session(id: ID!): HarnessSession  sessions(ids: [ID!]!): [HarnessSession!]! }
  type HarnessSession @key(fields: "id") { id: ID! }
`;

describe('memory in the mesh, through the gateway', () => {
  let mesh: TestMesh;

  beforeAll(async () => {
    mesh = await startTestMesh();
  });
  afterAll(async () => {
    await mesh?.teardown();
  });

  it('serves memory next to projects: append, search, history and the active search mode', async () => {
    const entry = { sessionId: 'claude-code:e2e-1', agent: 'agent-e2e', role: 'assistant', content: 'Moved flushTokenCache into src/lib/cache.ts', dedupeKey: 'n1' };
    const { appendMemory } = await gqlData<{ appendMemory: string }>(mesh.gatewayUrl, 'mutation ($e: MemoryEntryInput!) { appendMemory(entry: $e) }', { e: entry });
    const again = await gqlData<{ appendMemory: string }>(mesh.gatewayUrl, 'mutation ($e: MemoryEntryInput!) { appendMemory(entry: $e) }', { e: entry });
    expect(again.appendMemory).toBe(appendMemory);

    const data = await gqlData<{
      memorySearch: { messageId: string; matchedBy: string[]; conversation: { sessionKey: string } }[];
      sessionHistory: { content: string }[];
      memorySearchMode: { mode: string; reason: string };
      projects: unknown[];
    }>(
      mesh.gatewayUrl,
      `{ memorySearch(query: "TokenCache", agent: "agent-e2e") { messageId matchedBy conversation { sessionKey } }
         sessionHistory(sessionId: "claude-code:e2e-1") { content }
         memorySearchMode { mode reason }
         projects { id } }`,
    );
    expect(data.memorySearch).toEqual([{ messageId: appendMemory, matchedBy: ['TRIGRAM'], conversation: { sessionKey: 'claude-code:e2e-1' } }]);
    expect(data.sessionHistory).toEqual([{ content: entry.content }]);
    expect(data.memorySearchMode.mode).toBe('LEXICAL');
    expect(data.projects).toEqual([]);
  });

  describe('HarnessSession.history through federation', () => {
    let stub: Served;
    let gateway: RunningGateway;

    beforeAll(async () => {
      await mesh.memory.services.memory.appendMany(
        [10, 100].flatMap((n) =>
          Array.from({ length: n }, (_, i) => ({
            sessionId: `claude-code:fed-${n}`,
            agent: 'agent-fed',
            role: 'assistant',
            content: `message ${i + 1} of ${n}`,
            dedupeKey: `m${i}`,
            createdAt: new Date(Date.UTC(2025, 0, 1, 0, i)),
          })),
        ),
      );
      const log = silentLogger();
      stub = await startSubgraph({
        name: 'sessions-stub',
        schema: buildSubgraphSchema({
          typeDefs: gql(SESSIONS_STUB_SDL),
          resolvers: {
            Query: {
              session: (_: unknown, { id }: { id: string }) => ({ id }),
              sessions: (_: unknown, { ids }: { ids: string[] }) => ids.map((id) => ({ id })),
            },
          },
        }),
        host: '127.0.0.1',
        port: 0,
        log,
        context: (base) => base,
      });
      const memory = await buildMemorySchema();
      const composed = composeServices([
        { name: 'sessions', url: stub.url, typeDefs: gql(SESSIONS_STUB_SDL) },
        { name: 'memory', url: mesh.subgraphUrls.memory!, typeDefs: gql(memory.sdl) },
      ]);
      if (composed.errors) throw new Error(composed.errors.map((e) => e.message).join('\n'));
      gateway = await startGateway({
        supergraphSdl: composed.supergraphSdl,
        port: 0,
        subgraphUrls: { sessions: stub.url, memory: mesh.subgraphUrls.memory! },
        log,
      });
    });
    afterAll(async () => {
      await gateway?.stop();
      await stub?.stop();
    });

    /** SQL statements the memory subgraph ran for one request. */
    async function sqlOf<T>(url: string, query: string, variables?: Record<string, unknown>): Promise<{ statements: number; data: T }> {
      const before = mesh.memory.queryCount();
      const data = await gqlData<T>(url, query, variables);
      return { statements: mesh.memory.queryCount() - before, data };
    }

    it('session(id) { history { content } } costs the same SQL for 10 and for 100 messages', async () => {
      type One = { session: { history: { content: string }[] } };
      const Q = 'query ($id: ID!) { session(id: $id) { history(limit: 500) { content } } }';
      const ten = await sqlOf<One>(gateway.url, Q, { id: 'claude-code:fed-10' });
      const hundred = await sqlOf<One>(gateway.url, Q, { id: 'claude-code:fed-100' });
      expect(ten.data.session.history).toHaveLength(10);
      expect(hundred.data.session.history).toHaveLength(100);
      expect(hundred.data.session.history.at(-1)).toEqual({ content: 'message 100 of 100' });
      expect({ ten: ten.statements, hundred: hundred.statements }).toEqual({ ten: 1, hundred: 1 });
    });

    it('batches the entity fetch of many sessions into one statement per field', async () => {
      type Many = { sessions: { id: string; history: unknown[]; conversation: { agent: string } | null }[] };
      const Q = 'query ($ids: [ID!]!) { sessions(ids: $ids) { id history(limit: 500) { content } conversation { agent } } }';
      const one = await sqlOf<Many>(gateway.url, Q, { ids: ['claude-code:fed-10'] });
      const three = await sqlOf<Many>(gateway.url, Q, { ids: ['claude-code:fed-10', 'claude-code:fed-100', 'claude-code:none'] });
      expect(three.data.sessions.map((s) => [s.id, s.history.length, s.conversation?.agent ?? null])).toEqual([
        ['claude-code:fed-10', 10, 'agent-fed'],
        ['claude-code:fed-100', 100, 'agent-fed'],
        ['claude-code:none', 0, null],
      ]);
      expect({ one: one.statements, three: three.statements }).toEqual({ one: 2, three: 2 });
    });

    it('answers the _entities request the gateway sends, at the mesh memory subgraph, with constant SQL', async () => {
      type Entities = { _entities: { history: unknown[] }[] };
      const Q = 'query ($reps: [_Any!]!) { _entities(representations: $reps) { ... on HarnessSession { history(limit: 500) { content } } } }';
      const ten = await sqlOf<Entities>(mesh.subgraphUrls.memory!, Q, { reps: [{ __typename: 'HarnessSession', id: 'claude-code:fed-10' }] });
      const hundred = await sqlOf<Entities>(mesh.subgraphUrls.memory!, Q, { reps: [{ __typename: 'HarnessSession', id: 'claude-code:fed-100' }] });
      expect([ten.data._entities[0]!.history.length, hundred.data._entities[0]!.history.length]).toEqual([10, 100]);
      expect({ ten: ten.statements, hundred: hundred.statements }).toEqual({ ten: 1, hundred: 1 });
    });
  });
});
