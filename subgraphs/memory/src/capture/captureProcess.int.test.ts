import { createDataSource, EventLog, EventNotifier, type MeshDataSource } from '@keelson/platform';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { streams } from '@keelson/schema';
import { AssertionKey, serviceIdentity, silentLogger } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/db';
import { startMemoryProcess, type MemoryProcess } from '../../test/support/memoryProcess';
import { GraphqlTranscriptSource } from './graphqlTranscriptSource';
import type { CapturedTranscriptEntry } from './transcriptSource';

jest.setTimeout(120_000);

/**
 * Plays the sessions subgraph over HTTP: `transcriptEntries(sessionId, ids)` answered from a map, a
 * refused session answered BAD_USER_INPUT, and `down` answering 503 (a subgraph being deployed).
 */
class SessionsStub {
  readonly transcripts = new Map<string, CapturedTranscriptEntry[]>();
  down = 0;
  requests = 0;
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        this.requests += 1;
        const send = (status: number, payload: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(payload));
        };
        // As a real subgraph: nothing is answered without the caller's service assertion.
        if (!req.headers['x-keelson-assertion']) return send(401, { errors: [{ message: 'no caller assertion', extensions: { code: 'UNAUTHENTICATED' } }] });
        if (this.down > 0) {
          this.down -= 1;
          return send(503, { errors: [{ message: 'sessions subgraph restarting', extensions: { code: 'SERVICE_UNAVAILABLE' } }] });
        }
        const { variables } = JSON.parse(body) as { variables: { sessionId: string; ids: string[] } };
        if (variables.sessionId.startsWith('refused:')) {
          return send(200, { data: null, errors: [{ message: 'sessionId: malformed', extensions: { code: 'BAD_USER_INPUT' } }] });
        }
        const wanted = new Set(variables.ids);
        send(200, { data: { transcriptEntries: (this.transcripts.get(variables.sessionId) ?? []).filter((e) => wanted.has(e.id)) } });
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/graphql`;
  }

  add(sessionId: string, entries: CapturedTranscriptEntry[]): string[] {
    this.transcripts.set(sessionId, [...(this.transcripts.get(sessionId) ?? []), ...entries]);
    return entries.map((e) => e.id);
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('the GraphQL transcript source', () => {
  const stub = new SessionsStub();
  beforeAll(() => stub.start());
  afterAll(() => stub.stop());

  it('fetches entries by id, reads a refusal as "no entries", and rejects while the sessions subgraph is down', async () => {
    stub.add('claude-code:s1', [{ id: 'a', role: 'user', content: 'hello' }, { id: 'b', role: 'assistant', content: 'hi' }]);
    const source = new GraphqlTranscriptSource(stub.url, serviceIdentity(AssertionKey.random(), 'memory'));
    const signal = AbortSignal.timeout(5_000);
    expect(await source.entries('claude-code:s1', ['b', 'x'], signal)).toEqual([{ id: 'b', role: 'assistant', content: 'hi' }]);
    expect(await source.entries('refused:1', ['a'], signal)).toEqual([]);
    stub.down = 1;
    await expect(source.entries('claude-code:s1', ['a'], signal)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', message: 'sessions subgraph restarting' });
    await expect(new GraphqlTranscriptSource('http://127.0.0.1:1/graphql', serviceIdentity(AssertionKey.random(), 'memory')).entries('claude-code:s1', ['a'], signal)).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      message: expect.stringMatching(/^the sessions subgraph at http:\/\/127\.0\.0\.1:1\/graphql is unreachable/),
    });
  });
});

describe('capture in the memory process, killed mid-batch', () => {
  const stub = new SessionsStub();
  let db: TestDatabase;
  let emitter: MeshDataSource & { events: EventLog; notifier: EventNotifier };
  let memory: MemoryProcess | undefined;
  const env = () => ({ DATABASE_URL: db.url, KEELSON_SESSIONS_URL: stub.url, KEELSON_RUNS_URL: stub.url });
  const sql = async <T>(text: string, params?: unknown[]) => (await emitter.dataSource.query(text, params)) as T[];

  beforeAll(async () => {
    await stub.start();
    db = await createTestDatabase('keelson_memproc');
    memory = await startMemoryProcess(env());
    // The emitter plays the sessions subgraph's writes, on its own connections.
    const log = silentLogger();
    const ds = createDataSource({ url: db.url, entities: [], migrations: [], migrationsTableName: 'test_emitter_migrations', log, poolSize: 2 });
    await ds.dataSource.initialize();
    const notifier = new EventNotifier({ url: db.url, log });
    emitter = { ...ds, notifier, events: new EventLog(ds.dataSource, notifier) };
  });
  afterAll(async () => {
    await memory?.kill();
    await emitter?.notifier.stop();
    await emitter?.dataSource.destroy();
    await db?.drop();
    await stub.stop();
  });

  async function position(): Promise<number> {
    const [row] = await sql<{ position: string }>("SELECT position FROM event_consumer_cursors WHERE consumer = 'memory-capture'");
    return row ? Number(row.position) : 0;
  }

  async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${memory?.output().slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it('rolls the batch back with its cursor when the process dies inside the transaction; the restarted process stores every entry once, in order', async () => {
    // One entry of event 20 holds the writer (once) so the process can be killed with the batch's
    // first 19 events written in its open transaction.
    await sql('CREATE SEQUENCE hold_once');
    await sql(`CREATE FUNCTION hold_mid_batch() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.dedupe_key = 'hold-here' AND nextval('hold_once') = 1 THEN PERFORM pg_sleep(4); END IF;
        RETURN NEW;
      END $$`);
    await sql('CREATE TRIGGER hold_mid_batch BEFORE INSERT ON memory_messages FOR EACH ROW EXECUTE FUNCTION hold_mid_batch()');

    // 30 events of two entries over three sessions, committed together: one batch (50 at most).
    const sessions = ['claude-code:k-0', 'claude-code:k-1', 'claude-code:k-2'];
    const announced = Array.from({ length: 30 }, (_, e) => {
      const sessionId = sessions[e % 3]!;
      const ids = stub.add(sessionId, [0, 1].map((k) => ({ id: e === 19 && k === 1 ? 'hold-here' : `e${e}-${k}`, role: k ? 'assistant' : 'user', content: `event ${e} entry ${k}` })));
      return { sessionId, ids };
    });
    const last = await emitter.dataSource.transaction(async (m) => {
      let seq = 0;
      for (const a of announced) {
        seq = (await emitter.events.append(m, { stream: streams.harness, key: a.sessionId, type: 'TRANSCRIPT_APPENDED', payload: { sessionId: a.sessionId, entryIds: a.ids } })).seq;
      }
      return seq;
    });

    await until('the writer to hold mid-batch', async () => (await sql("SELECT 1 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()")).length > 0);
    // Its transaction has already written (a transaction id is assigned at the first write).
    expect(await sql("SELECT backend_xid IS NOT NULL AS wrote FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()")).toEqual([{ wrote: true }]);
    await memory!.kill();
    // Nothing of the batch is visible, and the cursor has not moved.
    expect(await sql("SELECT count(*)::int AS n FROM memory_messages")).toEqual([{ n: 0 }]);
    expect(await position()).toBe(0);

    memory = await startMemoryProcess(env());
    await until('the restarted process to catch up', async () => (await position()) === last);

    const [counts] = await sql<{ n: number; keys: number }>('SELECT count(*)::int AS n, count(DISTINCT (conversation_id, dedupe_key))::int AS keys FROM memory_messages');
    expect(counts).toEqual({ n: 60, keys: 60 });
    const gaps = await sql(
      `SELECT c.session_key FROM memory_conversations c JOIN memory_messages m ON m.conversation_id = c.id
       GROUP BY c.id HAVING min(m.seq) <> 1 OR max(m.seq) <> count(*) OR count(*) <> c.last_seq`,
    );
    expect(gaps).toEqual([]);
    const history = await sql<{ content: string }>(
      "SELECT m.content FROM memory_messages m JOIN memory_conversations c ON c.id = m.conversation_id WHERE c.session_key = 'claude-code:k-1' ORDER BY m.seq",
    );
    expect(history.map((h) => h.content)).toEqual([1, 4, 7, 10, 13, 16, 19, 22, 25, 28].flatMap((e) => [`event ${e} entry 0`, `event ${e} entry 1`]));
  });

  it('waits at its cursor while the sessions subgraph is down, then captures what it missed', async () => {
    const before = stub.requests;
    stub.down = 2;
    const ids = stub.add('claude-code:later', [{ id: 'l1', role: 'assistant', content: 'captured after the outage' }]);
    const seq = await emitter.dataSource.transaction(async (m) =>
      (await emitter.events.append(m, { stream: streams.harness, key: 'claude-code:later', type: 'TRANSCRIPT_APPENDED', payload: { sessionId: 'claude-code:later', entryIds: ids } })).seq,
    );
    await until('capture after the outage', async () => (await position()) === seq);
    expect(stub.requests - before).toBe(3);
    expect(await sql("SELECT m.content FROM memory_messages m JOIN memory_conversations c ON c.id = m.conversation_id WHERE c.session_key = 'claude-code:later'")).toEqual([
      { content: 'captured after the outage' },
    ]);
  });
});
