import { errorCodes, expectData, startMemoryHarness, type MemoryHarness } from '../../test/support/memoryHarness';

jest.setTimeout(60_000);

const APPEND = 'mutation ($entry: MemoryEntryInput!) { appendMemory(entry: $entry) }';
const MESSAGE = 'id seq role content sessionKey createdAt';

let h: MemoryHarness;

beforeAll(async () => {
  h = await startMemoryHarness();
});
afterAll(() => h?.close());

/** Appends `n` messages to a session through the service, a minute apart from `startAt`. */
async function seed(sessionId: string, agent: string, n: number, startAt: Date, extra: { taskId?: string; prefix?: string } = {}) {
  return h.running.services.memory.appendMany(
    Array.from({ length: n }, (_, i) => ({
      sessionId,
      agent,
      taskId: extra.taskId,
      role: i % 2 ? 'assistant' : 'user',
      content: `${extra.prefix ?? sessionId} message ${i + 1}`,
      dedupeKey: `k${i + 1}`,
      createdAt: new Date(startAt.getTime() + i * 60_000),
    })),
  );
}

describe('appendMemory', () => {
  it('stores a message and returns its id; a repeated dedupeKey returns the same id and stores nothing', async () => {
    const entry = { sessionId: 'claude-code:append-1', agent: 'alice', role: 'user', content: 'hello memory', dedupeKey: 'native-1', taskId: 'T-append' };
    const first = expectData(await h.gql<{ appendMemory: string }>(APPEND, { entry })).appendMemory;
    const again = expectData(await h.gql<{ appendMemory: string }>(APPEND, { entry: { ...entry, content: 'a replay may differ' } })).appendMemory;
    expect(again).toBe(first);
    const history = expectData(await h.gql<{ sessionHistory: { id: string; content: string; seq: number }[] }>(
      `{ sessionHistory(sessionId: "claude-code:append-1") { ${MESSAGE} } }`,
    )).sessionHistory;
    expect(history).toEqual([expect.objectContaining({ id: first, content: 'hello memory', seq: 1 })]);
    const [conversation] = await h.sql('SELECT agent, task_id, last_seq FROM memory_conversations WHERE session_key = $1', ['claude-code:append-1']);
    expect(conversation).toEqual({ agent: 'alice', task_id: 'T-append', last_seq: '1' });
  });

  it('rejects a bad entry with BAD_USER_INPUT naming the field, storing nothing', async () => {
    const res = await h.gql(APPEND, { entry: { sessionId: 'claude-code:bad', agent: 'alice', role: 'Not A Role!', content: 'x' } });
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.message).toMatch(/entry\.role/);
    expect(await h.sql('SELECT 1 FROM memory_conversations WHERE session_key = $1', ['claude-code:bad'])).toEqual([]);
  });
});

describe('sessionHistory', () => {
  beforeAll(async () => {
    await seed('codex:hist-1', 'bob', 8, new Date('2025-03-01T10:00:00Z'));
    // A second agent's conversation of the same session interleaves in time.
    await seed('codex:hist-1', 'carol', 2, new Date('2025-03-01T10:02:30Z'), { prefix: 'carol' });
  });

  it("returns the session's newest messages, oldest first, across its agents", async () => {
    const { sessionHistory } = expectData(await h.gql<{ sessionHistory: { content: string }[] }>(
      '{ sessionHistory(sessionId: "codex:hist-1", limit: 4) { content } }',
    ));
    expect(sessionHistory.map((m) => m.content)).toEqual([
      'codex:hist-1 message 5',
      'codex:hist-1 message 6',
      'codex:hist-1 message 7',
      'codex:hist-1 message 8',
    ]);
    const all = expectData(await h.gql<{ sessionHistory: { content: string }[] }>('{ sessionHistory(sessionId: "codex:hist-1") { content } }'));
    expect(all.sessionHistory).toHaveLength(10);
    expect(all.sessionHistory.slice(2, 6).map((m) => m.content)).toEqual([
      'codex:hist-1 message 3',
      'carol message 1',
      'codex:hist-1 message 4',
      'carol message 2',
    ]);
  });

  it('is empty for an unknown session and rejects a limit out of range', async () => {
    expect(expectData(await h.gql('{ sessionHistory(sessionId: "codex:nobody") { id } }'))).toEqual({ sessionHistory: [] });
    const res = await h.gql('{ sessionHistory(sessionId: "codex:hist-1", limit: 501) { id } }');
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.message).toMatch(/limit/);
  });
});

describe('taskHistory', () => {
  it('unions conversations stamped with the task id and legacy ones keyed task:<id>, oldest first', async () => {
    await seed('claude-code:task-run', 'dave', 3, new Date('2025-04-01T09:00:00Z'), { taskId: 'T-42', prefix: 'stamped' });
    await seed('task:T-42', 'dave', 2, new Date('2025-04-01T09:01:30Z'), { prefix: 'legacy' });
    await seed('claude-code:other-task', 'dave', 2, new Date('2025-04-01T09:00:30Z'), { taskId: 'T-43', prefix: 'other' });
    const { taskHistory } = expectData(await h.gql<{ taskHistory: { content: string }[] }>('{ taskHistory(taskId: "T-42") { content } }'));
    expect(taskHistory.map((m) => m.content)).toEqual(['stamped message 1', 'stamped message 2', 'legacy message 1', 'stamped message 3', 'legacy message 2']);
    const newest = expectData(await h.gql<{ taskHistory: { content: string }[] }>('{ taskHistory(taskId: "T-42", limit: 2) { content } }'));
    expect(newest.taskHistory.map((m) => m.content)).toEqual(['stamped message 3', 'legacy message 2']);
  });
});

describe('Conversation.messages', () => {
  it('pages through a conversation in order with Relay cursors', async () => {
    const [first] = await seed('pi:paged', 'erin', 5, new Date('2025-05-01T00:00:00Z'));
    const PAGE = `query ($id: ID!, $after: String) {
      conversation(id: $id) { sessionKey agent messages(first: 2, after: $after) { edges { cursor node { seq content } } pageInfo { hasNextPage endCursor } } }
    }`;
    type Page = { conversation: { messages: { edges: { cursor: string; node: { seq: number } }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } };
    const seen: number[] = [];
    let after: string | null = null;
    for (;;) {
      const page: Page = expectData(await h.gql<Page>(PAGE, { id: first!.conversationId, after }));
      seen.push(...page.conversation.messages.edges.map((e) => e.node.seq));
      if (!page.conversation.messages.pageInfo.hasNextPage) break;
      after = page.conversation.messages.pageInfo.endCursor;
    }
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    expect(errorCodes(await h.gql(PAGE, { id: first!.conversationId, after: 'nope' }))).toEqual(['BAD_USER_INPUT']);
  });
});

describe('session settings', () => {
  it('saves, replaces and reads a JSON object per session; null when none', async () => {
    const SAVE = 'mutation ($id: ID!, $s: JSON!) { saveSessionSettings(sessionId: $id, settings: $s) }';
    const READ = 'query ($id: ID!) { sessionSettings(sessionId: $id) }';
    expect(expectData(await h.gql(READ, { id: 'opencode:s1' }))).toEqual({ sessionSettings: null });
    expect(expectData(await h.gql(SAVE, { id: 'opencode:s1', s: { model: 'fast', temperature: 0.2 } }))).toEqual({ saveSessionSettings: true });
    expect(expectData(await h.gql(SAVE, { id: 'opencode:s1', s: { model: 'deep' } }))).toEqual({ saveSessionSettings: true });
    expect(expectData(await h.gql(READ, { id: 'opencode:s1' }))).toEqual({ sessionSettings: { model: 'deep' } });
    const bad = await h.gql(SAVE, { id: 'opencode:s1', s: ['not', 'an', 'object'] });
    expect(errorCodes(bad)).toEqual(['BAD_USER_INPUT']);
    expect(bad.errors![0]!.message).toMatch(/settings/);
  });
});

describe('HarnessSession and Task through federation (_entities, as the gateway asks)', () => {
  const ENTITIES = `query ($reps: [_Any!]!) {
    _entities(representations: $reps) {
      ... on HarnessSession { id history(limit: 500) { content } conversation { agent } }
      ... on Task { id history { content } }
    }
  }`;
  type Entities = { _entities: { id: string; history: { content: string }[]; conversation?: { agent: string } | null }[] };

  /** SQL statements one request costs the subgraph. */
  async function statements(reps: unknown[]): Promise<{ count: number; data: Entities }> {
    const before = h.running.queryCount();
    const data = expectData(await h.gql<Entities>(ENTITIES, { reps }));
    return { count: h.running.queryCount() - before, data };
  }

  it('resolves history and conversation per session, and task history, in one batched statement each', async () => {
    await seed('claude-code:fed-10', 'fed', 10, new Date('2025-06-01T00:00:00Z'));
    await seed('claude-code:fed-100', 'fed', 100, new Date('2025-06-01T00:00:00Z'));
    const ten = await statements([{ __typename: 'HarnessSession', id: 'claude-code:fed-10' }]);
    const hundred = await statements([{ __typename: 'HarnessSession', id: 'claude-code:fed-100' }]);
    expect(ten.data._entities[0]!.history).toHaveLength(10);
    expect(hundred.data._entities[0]!.history).toHaveLength(100);
    expect(hundred.data._entities[0]!.conversation).toEqual({ agent: 'fed' });
    // history + conversation: two loaders, one statement each, whatever the number of messages…
    expect({ ten: ten.count, hundred: hundred.count }).toEqual({ ten: 2, hundred: 2 });
    // …and whatever the number of sessions and tasks asked together.
    const many = await statements([
      { __typename: 'HarnessSession', id: 'claude-code:fed-10' },
      { __typename: 'HarnessSession', id: 'claude-code:fed-100' },
      { __typename: 'HarnessSession', id: 'codex:hist-1' },
      { __typename: 'HarnessSession', id: 'claude-code:never-captured' },
      { __typename: 'Task', id: 'T-42' },
      { __typename: 'Task', id: 'T-43' },
    ]);
    expect(many.data._entities.map((e) => [e.id, e.history.length, e.conversation?.agent ?? null])).toEqual([
      ['claude-code:fed-10', 10, 'fed'],
      ['claude-code:fed-100', 100, 'fed'],
      ['codex:hist-1', 10, 'bob'],
      ['claude-code:never-captured', 0, null],
      ['T-42', 5, null],
      ['T-43', 2, null],
    ]);
    expect(many.count).toBe(3);
  });
});
