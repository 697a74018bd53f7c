import { decodeCursor, encodeCursor, type EventEnvelope } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { ZodError } from 'zod';
import type { TestDatabase } from '../../../test/support/db';
import { openEventLogFixture, range, type EventLogFixture } from '../../../test/support/eventLogFixture';
import { settled, sleep, within } from '../../../test/support/until';
import { createDataSource, type QueryCounter } from '../data/dataSource';
import { EventLog, notifyStreamChange } from './eventLog';
import { EventNotifier } from './notifier';

// The integration project's `testTimeout` is not applied (jest-circus reads only the global one).
jest.setTimeout(60_000);

const log = silentLogger();

/** A summary whose diff names the first gap, duplicate or reordering instead of printing 4000 numbers. */
function sequenceReport(seqs: number[], after: number) {
  const problems: string[] = [];
  let expected = after + 1;
  for (const [i, seq] of seqs.entries()) {
    if (seq !== expected) {
      problems.push(`#${i}: got ${seq}, expected ${expected}`);
      if (problems.length >= 5) break;
    }
    expected = seq + 1;
  }
  return { count: seqs.length, first: seqs[0], last: seqs.at(-1), problems };
}

/** The reader saw exactly after+1..last, in order; a failure names the reader. */
function expectExactly({ name, seqs, after }: Reader, last: number): void {
  const expected = range(after + 1, last);
  expect({ reader: name, ...sequenceReport(seqs, after) }).toEqual({
    reader: name,
    count: expected.length,
    first: expected[0],
    last: expected.at(-1),
    problems: [],
  });
  expect(seqs).toEqual(expected);
}

interface Reader {
  name: string;
  after: number;
  seqs: number[];
  done: Promise<void>;
}

describe('EventLog on real Postgres', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let queries: QueryCounter;
  let notifier: EventNotifier;
  let events: EventLog;
  let fixture: EventLogFixture | undefined;

  beforeAll(async () => {
    // Room for 8 writers (7 of them parked on the stream's row lock) plus the readers' queries.
    fixture = await openEventLogFixture('eventlog', 16, log);
    ({ db, dataSource, queries, notifier, events } = fixture);
  });

  afterAll(() => fixture?.close());

  /** One event in its own transaction, optionally holding the transaction open after the append. */
  function appendOne(stream: string, key: string, payload: unknown, holdMs = 0): Promise<EventEnvelope> {
    return dataSource.transaction(async (manager) => {
      const event = await events.append(manager, { stream, key, type: 'TEST', payload });
      // Holding after allocation is what would make a bigserial's allocation and commit order diverge.
      if (holdMs > 0) await manager.query('SELECT pg_sleep($1)', [holdMs / 1000]);
      return event;
    });
  }

  /** Follows `stream` from `after` until it has seen seq `last`, then returns the tail. */
  function startReader(source: EventLog, name: string, stream: string, after: number | undefined, last: number, key?: string): Reader {
    const seqs: number[] = [];
    const done = (async () => {
      const tail = source.tail(stream, after === undefined ? undefined : encodeCursor(after), { key });
      try {
        if (last <= (after ?? 0)) return;
        for await (const event of tail) {
          seqs.push(event.seq);
          if (event.seq >= last) break;
        }
      } finally {
        await tail.return?.();
      }
    })();
    return { name, after: after ?? 0, seqs, done };
  }

  async function head(stream: string): Promise<number> {
    const [row] = (await dataSource.query('SELECT coalesce(max(seq), 0)::int AS head FROM events WHERE stream = $1', [stream])) as Array<{ head: number }>;
    return row!.head;
  }

  /** Runs `writers` concurrent writers of `perWriter` events each; ~1 in 8 transactions holds 2–8 ms before commit. */
  function runWriters(stream: string, writers: number, perWriter: number, onCommit: (committed: number) => void) {
    let committed = 0;
    return Promise.all(
      range(1, writers).map(async (w) => {
        for (let i = 0; i < perWriter; i++) {
          const holdMs = Math.random() < 0.125 ? 2 + Math.floor(Math.random() * 7) : 0;
          await appendOne(stream, `writer-${w}`, { writer: w, i }, holdMs);
          committed += 1;
          onCommit(committed);
        }
      }),
    );
  }

  /** A promise per threshold, resolved once that many writes have committed. */
  function commitMilestones(...thresholds: number[]) {
    const waiting = thresholds.map((at) => {
      let resolve!: () => void;
      const reached = new Promise<void>((r) => (resolve = r));
      return { at, reached, resolve };
    });
    return {
      reached: (at: number) => waiting.find((m) => m.at === at)!.reached,
      onCommit: (committed: number) => {
        for (const m of waiting) if (committed >= m.at) m.resolve();
      },
    };
  }

  it('gives 8 concurrent writers × 500 one gap-free sequence, and every tail sees exactly cursor+1..N in order', async () => {
    const stream = 'concurrent';
    const writers = 8;
    const perWriter = 500;
    const total = writers * perWriter;
    const milestones = commitMilestones(800, 2400);

    const readers: Reader[] = [
      startReader(events, 'before writes, no cursor', stream, undefined, total),
      startReader(events, 'before writes, cursor 0', stream, 0, total),
    ];
    const started = performance.now();
    const writing = runWriters(stream, writers, perWriter, milestones.onCommit);

    await milestones.reached(800);
    const headEarly = await head(stream);
    readers.push(startReader(events, 'during writes, random cursor', stream, Math.floor(Math.random() * (headEarly + 1)), total));
    await milestones.reached(2400);
    const headLate = await head(stream);
    readers.push(startReader(events, 'during writes, cursor at head', stream, headLate, total));

    await writing;
    const writeMs = performance.now() - started;
    readers.push(startReader(events, 'after writes, random mid-stream cursor', stream, 1 + Math.floor(Math.random() * (total - 1)), total));
    readers.push(startReader(events, 'after writes, from the beginning', stream, undefined, total));

    await within(30_000, 'readers', Promise.all(readers.map((r) => r.done)));
    const readMs = performance.now() - started;
    for (const reader of readers) expectExactly(reader, total);
    expect(await events.read(stream, total)).toEqual([]);

    // Each writer's own events keep that writer's order.
    const all: EventEnvelope<{ writer: number; i: number }>[] = [];
    for (let after = 0; after < total; after = all.at(-1)!.seq) all.push(...(await events.read<{ writer: number; i: number }>(stream, after)));
    for (const w of range(1, writers)) {
      expect(all.filter((e) => e.payload.writer === w).map((e) => e.payload.i)).toEqual(range(0, perWriter - 1));
    }

    console.log(
      `eventLog concurrent append: ${writers} writers × ${perWriter} = ${total} events in ${writeMs.toFixed(0)} ms ` +
        `= ${Math.round(total / (writeMs / 1000))} events/s (~1/8 txs held 2–8 ms before commit); ` +
        `${readers.length} tails complete after ${readMs.toFixed(0)} ms`,
    );
    // 4,000 transactions, one after another on the stream's row lock: ~7 s on a quiet two-core box,
    // ~41 s inside CI's full run (both cores busy), ~70 s with more beside it. What is checked is the
    // order, never the time.
  }, 180_000);

  it('makes a second writer wait for the first to commit, so sequences commit in allocation order', async () => {
    const stream = 'commit-order';
    const order: string[] = [];
    const reader = startReader(events, 'waiting', stream, undefined, 2);
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let firstAppended!: () => void;
    const firstHasSeq = new Promise<void>((resolve) => (firstAppended = resolve));

    const first = dataSource.transaction(async (manager) => {
      const event = await events.append(manager, { stream, key: 'a', type: 'TEST', payload: { who: 'first' } });
      firstAppended();
      await firstHeld;
      order.push('first commits');
      return event;
    });
    await firstHasSeq;
    const second = appendOne(stream, 'b', { who: 'second' }).then((event) => {
      order.push('second appended');
      return event;
    });

    await sleep(200);
    expect(await settled(second)).toBe(false);
    expect(reader.seqs).toEqual([]);

    releaseFirst();
    const [a, b] = await Promise.all([first, second]);
    await within(5_000, 'reader', reader.done);
    expect([a.seq, b.seq]).toEqual([1, 2]);
    expect(order).toEqual(['first commits', 'second appended']);
    expect(reader.seqs).toEqual([1, 2]);
  });

  it('leaves neither gap nor event behind a rolled-back append: the next append takes that sequence', async () => {
    const stream = 'rollback';
    await appendOne(stream, 'k', { n: 1 });
    await expect(
      dataSource.transaction(async (manager) => {
        await events.append(manager, { stream, key: 'k', type: 'TEST', payload: { n: 'rolled back' } });
        throw new Error('state change failed');
      }),
    ).rejects.toThrow('state change failed');
    const reader = startReader(events, 'waiting', stream, 1, 3);

    // A writer parked on the lock behind a transaction that then rolls back takes the freed sequence.
    let failFirst!: () => void;
    const firstHeld = new Promise<void>((resolve) => (failFirst = resolve));
    let firstAppended!: () => void;
    const firstHasSeq = new Promise<void>((resolve) => (firstAppended = resolve));
    const doomed = dataSource.transaction(async (manager) => {
      await events.append(manager, { stream, key: 'k', type: 'TEST', payload: { n: 'rolled back too' } });
      firstAppended();
      await firstHeld;
      throw new Error('state change failed');
    });
    await firstHasSeq;
    const parked = appendOne(stream, 'k', { n: 2 });
    await sleep(100);
    expect(await settled(parked)).toBe(false);
    failFirst();
    await expect(doomed).rejects.toThrow('state change failed');
    expect((await parked).seq).toBe(2);
    expect((await appendOne(stream, 'k', { n: 3 })).seq).toBe(3);

    await within(5_000, 'reader', reader.done);
    expect(reader.seqs).toEqual([2, 3]);
    expect((await events.read(stream, 0)).map((e) => [e.seq, e.payload])).toEqual([
      [1, { n: 1 }],
      [2, { n: 2 }],
      [3, { n: 3 }],
    ]);
  });

  it('notifies a change without an event at commit (the stream\'s last sequence, no type), nothing on rollback, and tails read nothing new', async () => {
    const stream = 'unevented';
    await appendOne(stream, 'k', { n: 1 });
    await appendOne(stream, 'k', { n: 2 });
    const heard: [string, number, string | undefined][] = [];
    // Only notifications without a type (the appends' own may still be on their way).
    const unwatch = notifier.watch({ event: (s, seq, type) => void (type === undefined && (s === stream || s === 'never-appended') ? heard.push([s, seq, type]) : undefined) });
    const reader = startReader(events, 'after 2', stream, 2, 3);
    try {
      await expect(
        dataSource.transaction(async (manager) => {
          await notifyStreamChange(manager, stream);
          throw new Error('state change failed');
        }),
      ).rejects.toThrow('state change failed');
      let told!: () => void;
      const heardCommit = new Promise<void>((resolve) => (told = resolve));
      const unwatchCommit = notifier.watch({ event: (s) => void (s === 'never-appended' ? told() : undefined) });
      // Sent at the commit, not before: held open, the transaction has told nobody yet.
      await dataSource.transaction(async (manager) => {
        await notifyStreamChange(manager, stream);
        await sleep(100);
        expect(heard).toEqual([]);
      });
      await dataSource.transaction((manager) => notifyStreamChange(manager, 'never-appended'));
      await within(5_000, 'notifications', heardCommit);
      unwatchCommit();
      expect(heard).toEqual([
        [stream, 2, undefined],
        ['never-appended', 0, undefined],
      ]);
      // The tail woke and found nothing past its cursor; the next event is the first it gets.
      expect(await settled(reader.done)).toBe(false);
      expect((await appendOne(stream, 'k', { n: 3 })).seq).toBe(3);
      await within(5_000, 'reader', reader.done);
      expect(reader.seqs).toEqual([3]);
      await expect(dataSource.transaction((manager) => notifyStreamChange(manager, 'a:b'))).rejects.toThrow('a name without a colon expected');
    } finally {
      unwatch();
    }
  });

  describe('when the LISTEN connection is terminated', () => {
    let killable: EventNotifier;
    let killableLog: EventLog;

    beforeEach(() => {
      killable = new EventNotifier({ url: db.url, log, reconnectDelayMs: 300, applicationName: 'keelson-listener-killtest' });
      killableLog = new EventLog(dataSource, killable);
    });
    afterEach(() => killable.stop());

    async function terminateListener(): Promise<number> {
      const pid = killable.backendPid;
      expect(pid).toBeDefined();
      const [row] = (await dataSource.query('SELECT application_name FROM pg_stat_activity WHERE pid = $1', [pid])) as Array<{ application_name: string }>;
      expect(row?.application_name).toBe('keelson-listener-killtest');
      await dataSource.query('SELECT pg_terminate_backend($1)', [pid]);
      return pid!;
    }

    it('still delivers every event in order to every tail while writers continue', async () => {
      const stream = 'listener-killed-mid-stream';
      const total = 4 * 250;
      const milestones = commitMilestones(150, 300, 600);
      const readers = [
        startReader(killableLog, 'from start', stream, undefined, total),
        startReader(killableLog, 'from start, by cursor', stream, 0, total),
      ];
      const writing = runWriters(stream, 4, 250, milestones.onCommit);
      await milestones.reached(150);
      readers.push(startReader(killableLog, 'mid-stream', stream, await head(stream), total));

      await milestones.reached(300);
      const firstKilled = await terminateListener();
      readers.push(startReader(killableLog, 'started just after the kill', stream, await head(stream), total));
      await milestones.reached(600);
      // The reconnected listener can die too.
      for (let i = 0; i < 200 && [undefined, firstKilled].includes(killable.backendPid); i++) await sleep(10);
      const secondKilled = await terminateListener();
      readers.push(startReader(killableLog, 'started after the second kill', stream, Math.floor(Math.random() * (await head(stream))), total));
      await writing;

      await within(15_000, 'readers', Promise.all(readers.map((r) => r.done)));
      for (const reader of readers) expectExactly(reader, total);
      expect(killable.backendPid).toBeDefined();
      expect([firstKilled, secondKilled]).not.toContain(killable.backendPid);
    });

    it('delivers what committed while no LISTEN was active, once it listens again', async () => {
      const stream = 'listener-down-during-commit';
      await appendOne(stream, 'k', { n: 1 });
      const readers = [startReader(killableLog, 'from start', stream, undefined, 6), startReader(killableLog, 'from 1', stream, 1, 6)];
      await sleep(100);
      expect(readers.map((r) => r.seqs)).toEqual([[1], []]);

      await terminateListener();
      for (let i = 0; i < 50 && killable.backendPid !== undefined; i++) await sleep(10);
      expect(killable.backendPid).toBeUndefined();
      for (const n of range(2, 4)) await appendOne(stream, 'k', { n });
      readers.push(startReader(killableLog, 'started while no LISTEN is active', stream, 4, 6));
      for (const n of range(5, 6)) await appendOne(stream, 'k', { n });
      // These commits notified nobody: only the re-read after reconnecting can find them.
      expect(killable.backendPid).toBeUndefined();

      await within(10_000, 'readers', Promise.all(readers.map((r) => r.done)));
      for (const reader of readers) expectExactly(reader, 6);
    });
  });

  it('tails one key only, in order, and resumes that key from its last cursor', async () => {
    const stream = 'keyed';
    const keys = ['alpha', 'beta', 'gamma'];
    for (const i of range(0, 29)) await appendOne(stream, keys[i % 3]!, { i });
    const betaSeqs = range(0, 29).filter((i) => i % 3 === 1).map((i) => i + 1);

    const first = events.tail<{ i: number }>(stream, undefined, { key: 'beta' });
    const seen: EventEnvelope<{ i: number }>[] = [];
    for await (const event of first) {
      seen.push(event);
      if (seen.length === 4) break;
    }
    expect(seen.map((e) => e.seq)).toEqual(betaSeqs.slice(0, 4));
    expect(seen.every((e) => e.key === 'beta')).toBe(true);

    // Replays beta's rest, then follows live appends (seqs 31..36; beta's are 32 and 35).
    const resumed = startReader(events, 'resumed beta', stream, seen.at(-1)!.seq, 35, 'beta');
    for (const i of range(30, 35)) await appendOne(stream, keys[i % 3]!, { i });
    await within(5_000, 'resumed reader', resumed.done);
    expect(resumed.seqs).toEqual([...betaSeqs.slice(4), 32, 35]);
    expect(await events.read(stream, 35, { key: 'beta' })).toEqual([]);
  });

  it('reads a page of events per key in one statement: after the cursor, at most `limit` each, oldest first', async () => {
    const stream = 'paged';
    const keys = ['p1', 'p2', 'p3'];
    for (const i of range(0, 11)) await appendOne(stream, keys[i % 3]!, { i });
    // Sequences: p1 has 1, 4, 7, 10; p2 has 2, 5, 8, 11; p3 has 3, 6, 9, 12.
    const pages = await events.readByKeys<{ i: number }>(stream, ['p1', 'p2', 'absent'], 4, 2);
    expect([...pages.keys()]).toEqual(['p1', 'p2', 'absent']);
    expect(pages.get('p1')!.map((e) => e.seq)).toEqual([7, 10]);
    expect(pages.get('p2')!.map((e) => e.seq)).toEqual([5, 8]);
    expect(pages.get('absent')).toEqual([]);
    const [first] = pages.get('p2')!;
    expect(first).toEqual(expect.objectContaining({ cursor: encodeCursor(5), stream, key: 'p2', type: 'TEST', payload: { i: 4 }, actor: null }));
    expect(first!.at).toBeInstanceOf(Date);
  });

  it('ends a tail with a read error, and a new tail from the last cursor continues without gap', async () => {
    const stream = 'read-failure';
    for (const n of range(1, 5)) await appendOne(stream, 'k', { n });
    const { dataSource: doomed } = createDataSource({ url: db.url, entities: [], migrations: [], migrationsTableName: 'eventlog_test_migrations', log, poolSize: 2 });
    await doomed.initialize();
    const tail = new EventLog(doomed, notifier).tail(stream);
    const first = await tail.next();
    expect(first.value?.seq).toBe(1);
    const lastCursor = first.value!.cursor;
    // The first read fetched a page; draining it needs no database.
    for (const seq of [2, 3, 4, 5]) expect((await tail.next()).value?.seq).toBe(seq);
    await doomed.destroy();
    await expect(tail.next()).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });

    const resumed = startReader(events, 'resumed', stream, decodeCursor(lastCursor), 7);
    for (const n of [6, 7]) await appendOne(stream, 'k', { n });
    await within(5_000, 'resumed reader', resumed.done);
    expect(resumed.seqs).toEqual([2, 3, 4, 5, 6, 7]);
  });

  it('wakes 50 tails at one cursor with one read per commit, and each still gets every event once', async () => {
    const stream = 'fanout';
    const start = await appendOne(stream, 'k', { i: 0 });
    const tails = range(1, 50).map(() => events.tail<{ i: number }>(stream, start.cursor));
    const firsts = tails.map((t) => t.next());
    await sleep(200);
    for (const p of firsts) expect(await settled(p)).toBe(false);

    const reads = jest.spyOn(events, 'read');
    try {
      await appendOne(stream, 'k', { i: 1 });
      const got = await within(5_000, 'first events', Promise.all(firsts));
      expect(got.map((r) => r.value?.payload.i)).toEqual(tails.map(() => 1));
      // One statement for the 50 tails the notification woke (50 without sharing).
      expect(reads).toHaveBeenCalledTimes(1);

      // Each tail's page was its own copy: every tail goes on to the next event, once.
      const seconds = tails.map((t) => t.next());
      await appendOne(stream, 'k', { i: 2 });
      const next = await within(5_000, 'second events', Promise.all(seconds));
      expect(next.map((r) => [r.value?.payload.i, r.value?.seq])).toEqual(tails.map(() => [2, start.seq + 2]));
      // A tail at another cursor reads on its own and replays from there.
      const behind = startReader(events, 'behind', stream, start.seq, start.seq + 2);
      await within(5_000, 'behind', behind.done);
      expect(behind.seqs).toEqual([start.seq + 1, start.seq + 2]);
      // A read is shared only while it is out: none is kept once answered (nothing accumulates per commit).
      expect((events as unknown as { reading: Map<string, unknown> }).reading.size).toBe(0);
    } finally {
      reads.mockRestore();
      await Promise.all(tails.map((t) => t.return!()));
    }
  });

  it("ends a waiting tail promptly when the consumer calls return()", async () => {
    const tail = events.tail('quiet');
    const pending = tail.next();
    await sleep(100);
    expect(await settled(pending)).toBe(false);
    const returned = performance.now();
    await tail.return!();
    await expect(within(500, 'pending next()', pending)).resolves.toEqual({ value: undefined, done: true });
    expect(performance.now() - returned).toBeLessThan(500);
    await expect(tail.next()).resolves.toEqual({ value: undefined, done: true });
  });

  it('ends every waiting tail when the notifier stops, without polling the database', async () => {
    const own = new EventNotifier({ url: db.url, log });
    const ownLog = new EventLog(dataSource, own);
    const tails = [ownLog.tail('quiet'), ownLog.tail('quiet', '0'), ownLog.tail('also-quiet')];
    const pending = tails.map((t) => t.next());
    await sleep(100);
    for (const p of pending) expect(await settled(p)).toBe(false);

    await own.stop();
    const before = queries.count;
    await expect(within(1_000, 'pending next()', Promise.all(pending))).resolves.toEqual(tails.map(() => ({ value: undefined, done: true })));
    await sleep(100);
    // One final read per tail at most; a tail spinning on a stopped notifier would issue thousands.
    expect(queries.count - before).toBeLessThanOrEqual(tails.length);
    // A tail started after stop() ends too instead of waiting forever.
    await expect(within(1_000, 'late tail', ownLog.tail('quiet').next())).resolves.toEqual({ value: undefined, done: true });
  });

  it('rejects cursors that are not a decimal sequence number with a zod error', () => {
    for (const bad of ['abc', '-1', '1.5', '', ' 1', '01', '1e3', '0x10']) {
      expect(() => decodeCursor(bad)).toThrow(ZodError);
      expect(() => events.tail('any', bad)).toThrow(ZodError);
    }
    expect(decodeCursor(undefined)).toBe(0);
    expect(decodeCursor(null)).toBe(0);
    expect(decodeCursor('0')).toBe(0);
    expect(decodeCursor(encodeCursor(4000))).toBe(4000);
  });
});
