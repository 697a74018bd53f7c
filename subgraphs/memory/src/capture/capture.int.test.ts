import { errorCodes, expectData, startMemoryHarness, type MemoryHarness } from '../../test/support/memoryHarness';
import type { CaptureConsumer, CaptureOptions, CapturedTranscriptEntry, TranscriptSource } from '../index';

jest.setTimeout(60_000);

/** Plays the sessions subgraph's transcript store: entries by session, fetched by id. */
class Transcripts implements TranscriptSource {
  private readonly bySession = new Map<string, CapturedTranscriptEntry[]>();
  /** Fetches to fail before answering again (an unavailable sessions subgraph). */
  failures = 0;
  fetches = 0;
  /** Every id each fetch asked for, in order. */
  readonly fetched: string[] = [];

  /** @param delayMs how long each fetch takes (a remote sessions subgraph) */
  constructor(private readonly delayMs = 0) {}

  add(sessionId: string, ...entries: CapturedTranscriptEntry[]): string[] {
    const list = this.bySession.get(sessionId) ?? [];
    list.push(...entries);
    this.bySession.set(sessionId, list);
    return entries.map((e) => e.id);
  }

  async entries(sessionId: string, ids: readonly string[]): Promise<CapturedTranscriptEntry[]> {
    this.fetches += 1;
    this.fetched.push(...ids);
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.failures > 0) {
      this.failures -= 1;
      throw new Error('sessions subgraph unavailable');
    }
    const wanted = new Set(ids);
    return (this.bySession.get(sessionId) ?? []).filter((e) => wanted.has(e.id));
  }
}

const entry = (id: string, content: string, role = 'assistant', at = '2025-07-01T10:00:00Z'): CapturedTranscriptEntry => ({ id, role, content, createdAt: at });

let h: MemoryHarness;
const transcripts = new Transcripts();
const manual = (extra: Partial<CaptureOptions> = {}): CaptureOptions => ({ source: transcripts, autoStart: false, ...extra });
const consumer = (): CaptureConsumer => h.running.services.capture!;

/** Every conversation's seqs are exactly 1..n (no duplicate, no gap) and match its counter. */
async function expectGapless(): Promise<void> {
  const broken = await h.sql(
    `SELECT c.session_key, c.last_seq, count(m.id) AS n, min(m.seq) AS lo, max(m.seq) AS hi, count(DISTINCT m.dedupe_key) AS keys
     FROM memory_conversations c LEFT JOIN memory_messages m ON m.conversation_id = c.id GROUP BY c.id
     HAVING count(m.id) <> c.last_seq OR count(m.id) <> count(DISTINCT m.dedupe_key) OR (count(m.id) > 0 AND (min(m.seq) <> 1 OR max(m.seq) <> count(m.id)))`,
  );
  expect(broken).toEqual([]);
}

beforeAll(async () => {
  h = await startMemoryHarness({ capture: manual() });
});
afterAll(() => h?.close());

describe('capture from the harness stream', () => {
  it("stores a session's transcript under its SessionId and task, once, however often it is delivered", async () => {
    const sessionId = 'claude-code:cap-1';
    await h.emit('SESSION_CREATED', sessionId, { harnessId: 'claude-code', agent: 'agent-cap', taskId: 'T-9' });
    const first = transcripts.add(sessionId, entry('u1', 'please fix the parser', 'user'), entry('a1', 'fixed parseConfigFile'));
    await h.emit('TRANSCRIPT_APPENDED', sessionId, { entryIds: first });
    const second = transcripts.add(sessionId, entry('t1', 'PASS 12 tests', 'tool'));
    await h.emit('TRANSCRIPT_APPENDED', sessionId, { entryIds: second });
    // A replay: the sessions subgraph re-announces entries already announced.
    const last = await h.emit('TRANSCRIPT_APPENDED', sessionId, { entryIds: [...first, ...second] });
    // Other event types on the stream are none of capture's business.
    await h.emit('ASSISTANT_DELTA', sessionId, { text: 'fix' });

    await consumer().catchUp();
    expect(await consumer().position()).toBeGreaterThan(last);
    const history = async () =>
      expectData(await h.gql<{ sessionHistory: { seq: number; role: string; content: string }[] }>(
        `{ sessionHistory(sessionId: "${sessionId}") { seq role content } }`,
      )).sessionHistory;
    const expected = [
      { seq: 1, role: 'user', content: 'please fix the parser' },
      { seq: 2, role: 'assistant', content: 'fixed parseConfigFile' },
      { seq: 3, role: 'tool', content: 'PASS 12 tests' },
    ];
    expect(await history()).toEqual(expected);
    expect(await h.sql('SELECT agent, channel, task_id FROM memory_conversations WHERE session_key = $1', [sessionId])).toEqual([
      { agent: 'agent-cap', channel: 'claude-code', task_id: 'T-9' },
    ]);
    expect(expectData(await h.gql<{ taskHistory: unknown[] }>('{ taskHistory(taskId: "T-9") { id } }')).taskHistory).toHaveLength(3);

    // The whole stream ingested a second time from the start: still each message once, seqs unchanged.
    await h.sql("UPDATE event_consumer_cursors SET position = 0 WHERE consumer = 'memory-capture'");
    await consumer().catchUp();
    expect(await history()).toEqual(expected);
    await expectGapless();
  });

  it('resumes after a write fails mid-batch: the batch rolls back with its cursor, and a restarted consumer leaves no duplicate and no gap', async () => {
    await h.restart(manual({ batchSize: 10 }));
    const from = await consumer().position();
    // 25 events of 4 entries over 5 sessions; one entry of the 15th event (mid second batch) crashes the writer, once.
    const sessions = Array.from({ length: 5 }, (_, i) => `opencode:kill-${i}`);
    const seqs: number[] = [];
    for (let e = 0; e < 25; e++) {
      const sessionId = sessions[e % 5]!;
      const ids = transcripts.add(
        sessionId,
        ...Array.from({ length: 4 }, (_, k) => entry(e === 14 && k === 2 ? 'crash-here' : `e${e}-${k}`, `event ${e} entry ${k}`, 'assistant', `2025-07-02T10:${String(e).padStart(2, '0')}:0${k}Z`)),
      );
      seqs.push(await h.emit('TRANSCRIPT_APPENDED', sessionId, { entryIds: ids, agent: 'agent-kill' }));
    }
    // Non-transactional, so it survives the rollback it causes: the crash happens exactly once.
    await h.sql('CREATE SEQUENCE crash_once');
    await h.sql(`CREATE FUNCTION crash_mid_batch() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.dedupe_key = 'crash-here' AND nextval('crash_once') = 1 THEN RAISE EXCEPTION 'simulated crash mid-batch'; END IF;
        RETURN NEW;
      END $$`);
    await h.sql('CREATE TRIGGER crash_mid_batch BEFORE INSERT ON memory_messages FOR EACH ROW EXECUTE FUNCTION crash_mid_batch()');

    await expect(consumer().catchUp()).rejects.toThrow(/simulated crash/);
    // The first batch committed with its cursor; of the second, nothing (its first four events included).
    expect(await consumer().position()).toBe(seqs[9]);
    const [partial] = await h.sql<{ n: string }>("SELECT count(*) AS n FROM memory_messages WHERE dedupe_key LIKE 'e%-%' OR dedupe_key = 'crash-here'");
    expect(partial!.n).toBe('40');

    await h.restart(manual({ batchSize: 10 }));
    expect(await consumer().position()).toBe(seqs[9]);
    await consumer().catchUp();
    expect(await consumer().position()).toBe(seqs[24]);
    expect(from).toBeLessThan(seqs[0]!);
    const [all] = await h.sql<{ n: string; keys: string }>(
      "SELECT count(*) AS n, count(DISTINCT (conversation_id, dedupe_key)) AS keys FROM memory_messages WHERE dedupe_key LIKE 'e%-%' OR dedupe_key = 'crash-here'",
    );
    expect(all).toEqual({ n: '100', keys: '100' });
    await expectGapless();
    // Each session's messages are in the order the events announced them.
    const { sessionHistory } = expectData(await h.gql<{ sessionHistory: { content: string }[] }>(
      '{ sessionHistory(sessionId: "opencode:kill-4", limit: 500) { content } }',
    ));
    expect(sessionHistory.map((m) => m.content)).toEqual([4, 9, 14, 19, 24].flatMap((e) => [0, 1, 2, 3].map((k) => `event ${e} entry ${k}`)));
  });

  it('shares the work with a replica of the same name: each batch applied once, each transcript fetched once', async () => {
    // Fetches take a while, so both replicas are after the same batch at the same time.
    const remote = new Transcripts(25);
    const replica = await h.startReplica(manual({ batchSize: 3, source: remote }));
    await h.restart(manual({ batchSize: 3, source: remote }));
    const ids: string[] = [];
    for (let e = 0; e < 30; e++) {
      const sessionId = `pi:replicas-${e % 3}`;
      ids.push(...remote.add(sessionId, entry(`r${e}`, `replicated ${e}`)));
      await h.emit('TRANSCRIPT_APPENDED', sessionId, { entryIds: [`r${e}`] });
    }
    const applied = await Promise.all([consumer().catchUp(), replica.services.capture!.catchUp()]);
    // Events applied, per replica: together exactly the 30, and neither idle.
    expect(applied[0] + applied[1]).toBe(30);
    expect(Math.min(...applied)).toBeGreaterThan(0);
    expect([...remote.fetched].sort()).toEqual([...ids].sort());
    const [row] = await h.sql<{ n: string }>("SELECT count(*) AS n FROM memory_messages WHERE dedupe_key LIKE 'r%'");
    expect(row!.n).toBe('30');
    await expectGapless();
    // The tests after this one read from the shared transcripts.
    await h.restart(manual());
  });

  it('writes the rotation breadcrumb durably: the new id inherits the task and its history includes the old one', async () => {
    await h.emit('SESSION_CREATED', 'hermes:20250701_100000_aaaa', { agent: 'agent-hermes', taskId: 'T-rot' });
    await h.emit('TRANSCRIPT_APPENDED', 'hermes:20250701_100000_aaaa', {
      entryIds: transcripts.add('hermes:20250701_100000_aaaa', entry('h1', 'before rotation', 'user', '2025-07-01T10:00:00Z')),
    });
    await h.emit('SESSION_UPDATED', 'hermes:20250701_110000_bbbb', { previousSessionId: 'hermes:20250701_100000_aaaa' });
    await h.emit('TRANSCRIPT_APPENDED', 'hermes:20250701_110000_bbbb', {
      entryIds: transcripts.add('hermes:20250701_110000_bbbb', entry('h2', 'after rotation', 'assistant', '2025-07-01T11:00:00Z')),
    });
    await consumer().catchUp();
    await h.restart(manual());

    expect(await h.sql('SELECT session_key, previous_session_key, kind FROM memory_session_links')).toEqual([
      { session_key: 'hermes:20250701_110000_bbbb', previous_session_key: 'hermes:20250701_100000_aaaa', kind: 'session-rotation' },
    ]);
    const Q = `{ sessionHistory(sessionId: "hermes:20250701_110000_bbbb") { content sessionKey } taskHistory(taskId: "T-rot") { content } }`;
    const data = expectData(await h.gql<{ sessionHistory: { content: string; sessionKey: string }[]; taskHistory: { content: string }[] }>(Q));
    expect(data.sessionHistory).toEqual([
      { content: 'before rotation', sessionKey: 'hermes:20250701_100000_aaaa' },
      { content: 'after rotation', sessionKey: 'hermes:20250701_110000_bbbb' },
    ]);
    expect(data.taskHistory.map((m) => m.content)).toEqual(['before rotation', 'after rotation']);
    expect(await h.sql("SELECT agent, task_id, metadata FROM memory_conversations WHERE session_key = 'hermes:20250701_110000_bbbb'")).toEqual([
      { agent: 'agent-hermes', task_id: 'T-rot', metadata: { rotatedFrom: 'hermes:20250701_100000_aaaa' } },
    ]);
  });

  it('follows the stream live, retrying from its cursor while the transcript source is down, and skips malformed events', async () => {
    await h.restart({ source: transcripts });
    transcripts.failures = 2;
    const sessionId = 'qwen-code:live';
    await h.emit('TRANSCRIPT_APPENDED', sessionId, { entryIds: [] }); // malformed: no ids
    await h.emit('TRANSCRIPT_APPENDED', sessionId, { entryIds: transcripts.add(sessionId, entry('l1', 'live one')) });
    const deadline = Date.now() + 10_000;
    let history: { content: string }[] = [];
    while (Date.now() < deadline) {
      history = expectData(await h.gql<{ sessionHistory: { content: string }[] }>(`{ sessionHistory(sessionId: "${sessionId}") { content } }`)).sessionHistory;
      if (history.length) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(history).toEqual([{ content: 'live one' }]);
    expect(transcripts.failures).toBe(0);
    await expectGapless();
  });

  it('keeps summaries once per conversation range, and NOT_FOUND for an unknown conversation', async () => {
    const [c] = await h.sql<{ id: string }>("SELECT id FROM memory_conversations WHERE session_key = 'claude-code:cap-1'");
    const body = { conversationId: c!.id, fromSeq: 1, toSeq: 3, content: 'The parser was fixed; tests pass.' };
    const a = await h.running.services.summaries.save(body);
    const b = await h.running.services.summaries.save({ ...body, content: 'a retried activity wrote this' });
    expect(b).toEqual(a);
    await expect(h.running.services.summaries.save({ ...body, conversationId: '00000000-0000-4000-8000-000000000000' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(h.running.services.summaries.save({ ...body, fromSeq: 3, toSeq: 1 })).rejects.toMatchObject({ code: 'BAD_USER_INPUT' });
    const { conversation } = expectData(await h.gql<{ conversation: { summaries: { fromSeq: number; toSeq: number; content: string }[] } }>(
      `{ conversation(id: "${c!.id}") { summaries { fromSeq toSeq content } } }`,
    ));
    expect(conversation.summaries).toEqual([{ fromSeq: 1, toSeq: 3, content: 'The parser was fixed; tests pass.' }]);
    expect(errorCodes(await h.gql('{ conversation(id: "not-a-uuid") { id } }'))).toEqual([]);
  });

  it('names every full window no summary covers as a compaction candidate, and saveSummary stores a range once', async () => {
    await h.running.services.memory.appendMany(
      Array.from({ length: 25 }, (_, i) => ({ sessionId: 'pi:compact', agent: 'agent-compact', role: 'user', content: `compact ${i + 1}`, dedupeKey: `c${i}` })),
    );
    const [c] = await h.sql<{ id: string }>("SELECT id FROM memory_conversations WHERE session_key = 'pi:compact'");
    const candidates = async () =>
      expectData(await h.gql<{ compactionCandidates: { conversationId: string; fromSeq: number; toSeq: number; conversation: { sessionKey: string } }[] }>(
        '{ compactionCandidates(window: 10, limit: 500) { conversationId fromSeq toSeq conversation { sessionKey } } }',
      )).compactionCandidates.filter((r) => r.conversationId === c!.id);
    expect(await candidates()).toEqual([
      { conversationId: c!.id, fromSeq: 1, toSeq: 10, conversation: { sessionKey: 'pi:compact' } },
      { conversationId: c!.id, fromSeq: 11, toSeq: 20, conversation: { sessionKey: 'pi:compact' } },
    ]);
    const SAVE = 'mutation ($i: SummaryInput!) { saveSummary(input: $i) { id fromSeq toSeq content model } }';
    const input = { conversationId: c!.id, fromSeq: 1, toSeq: 10, content: 'The first ten steps.', model: 'fast-model' };
    const first = expectData(await h.gql<{ saveSummary: { id: string } }>(SAVE, { i: input })).saveSummary;
    const again = expectData(await h.gql<{ saveSummary: { id: string; content: string } }>(SAVE, { i: { ...input, content: 'a retry wrote this' } })).saveSummary;
    expect(again).toEqual({ ...first, content: 'The first ten steps.' });
    expect((await candidates()).map((r) => [r.fromSeq, r.toSeq])).toEqual([[11, 20]]);
    expect(errorCodes(await h.gql('{ compactionCandidates(window: 1) { fromSeq } }'))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await h.gql(SAVE, { i: { ...input, conversationId: '00000000-0000-4000-8000-000000000000' } }))).toEqual(['NOT_FOUND']);
  });
});
