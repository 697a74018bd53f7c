import { startMemoryHarness, type MemoryHarness } from '../../test/support/memoryHarness';
import { MemoryMessageAgent1764460800520 } from './1764460800520-MemoryMessageAgent';

jest.setTimeout(60_000);

/**
 * The migration that copies each message's agent from its conversation, run down and up over a store
 * written before it (rows inserted in the old shape, without the column).
 */
describe('MemoryMessageAgent1764460800520', () => {
  let h: MemoryHarness;
  const migration = new MemoryMessageAgent1764460800520();
  const runner = { query: (sql: string) => h.sql(sql) };
  const messageIndexes = async () =>
    (await h.sql<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE tablename = 'memory_messages' ORDER BY indexname")).map((r) => r.indexname);
  const agentColumn = async () =>
    h.sql<{ attnotnull: boolean }>("SELECT attnotnull FROM pg_attribute WHERE attrelid = 'memory_messages'::regclass AND attname = 'agent' AND NOT attisdropped");

  beforeAll(async () => {
    h = await startMemoryHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('backfills the agent of messages stored before it, from their conversation, and its down restores the old shape', async () => {
    await migration.down(runner);
    expect(await agentColumn()).toEqual([]);
    expect(await messageIndexes()).toContain('memory_messages_fts');

    // One session, two agents: the agent comes from each message's own conversation, not the session.
    const [a, b] = ['00000000-0000-4000-8000-00000000000a', '00000000-0000-4000-8000-00000000000b'];
    await h.sql(
      `INSERT INTO memory_conversations (id, session_key, agent, last_seq) VALUES ($1, 'pi:old', 'agent-a', 2), ($2, 'pi:old', 'agent-b', 1)`,
      [a, b],
    );
    await h.sql(
      `INSERT INTO memory_messages (conversation_id, seq, role, content, dedupe_key) VALUES
         ($1, 1, 'user', 'the flaky router again', 'm1'), ($1, 2, 'assistant', 'pinned the router epoch', 'm2'),
         ($2, 1, 'user', 'the flaky router in staging', 'm1')`,
      [a, b],
    );

    await migration.up(runner);
    expect(await h.sql('SELECT conversation_id, seq::int, agent FROM memory_messages ORDER BY conversation_id, seq')).toEqual([
      { conversation_id: a, seq: 1, agent: 'agent-a' },
      { conversation_id: a, seq: 2, agent: 'agent-a' },
      { conversation_id: b, seq: 1, agent: 'agent-b' },
    ]);
    expect(await agentColumn()).toEqual([{ attnotnull: true }]);
    const indexes = await messageIndexes();
    expect(indexes).toEqual(expect.arrayContaining(['memory_messages_agent_created', 'memory_messages_agent_fts']));
    expect(indexes).not.toContain('memory_messages_fts');
    // A writer that forgets the agent is refused.
    await expect(h.sql(`INSERT INTO memory_messages (conversation_id, seq, role, content, dedupe_key) VALUES ($1, 3, 'user', 'x', 'm3')`, [a])).rejects.toMatchObject({
      driverError: expect.objectContaining({ code: '23502', column: 'agent' }),
    });

    // The backfilled rows are found under their agent only, and appends after them carry theirs.
    const hits = await h.running.services.search.search({ query: 'flaky router', agent: 'agent-b', scope: 'MESSAGES' });
    expect(hits.map((hit) => [hit.agent, hit.content])).toEqual([['agent-b', 'the flaky router in staging']]);
    await h.running.services.memory.append({ sessionId: 'pi:old', agent: 'agent-b', role: 'assistant', content: 'router fixed', dedupeKey: 'm2' });
    expect(await h.sql("SELECT agent, seq::int FROM memory_messages WHERE content = 'router fixed'")).toEqual([{ agent: 'agent-b', seq: 2 }]);
  });
});
