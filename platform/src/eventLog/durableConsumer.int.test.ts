import type { EventEnvelope } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { Client } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import type { TestDatabase } from '../../../test/support/db';
import { openEventLogFixture, range, type EventLogFixture } from '../../../test/support/eventLogFixture';
import { sleep, untilTrue as until, within } from '../../../test/support/until';
import { createDataSource } from '../data/dataSource';
import { DurableConsumer, type DurableConsumerOptions } from './durableConsumer';
import { EventLog } from './eventLog';
import { EventNotifier } from './notifier';

// The integration project's `testTimeout` is not applied (jest-circus reads only the global one).
jest.setTimeout(60_000);

const log = silentLogger();

type Options = Partial<DurableConsumerOptions> & { name: string; stream: string };

describe('DurableConsumer on real Postgres', () => {
  let db: TestDatabase;
  let dataSource: DataSource;
  let notifier: EventNotifier;
  let events: EventLog;
  let fixture: EventLogFixture | undefined;

  /** Records every batch `prepare` saw and stores one row per applied event; failures and pauses on demand. */
  class Recorder extends DurableConsumer<EventEnvelope[]> {
    /** Sequences of each batch prepare was given (failed attempts included). */
    readonly seen: number[][] = [];
    /** performance.now() of each prepare call. */
    readonly attempts: number[] = [];
    /** Attempt indexes (0-based) whose prepare rejects. */
    failAttempts = new Set<number>();
    /** Runs inside apply after the batch's rows are written (may throw or pause). */
    afterWrite: ((m: EntityManager, batch: EventEnvelope[]) => Promise<void>) | undefined;
    /** Runs at the start of prepare. */
    beforePrepare: (() => Promise<void>) | undefined;

    constructor(
      opts: Options,
      readonly replica = 'r1',
    ) {
      super({ dataSource, events, notifier, log, ...opts });
    }

    get signal(): AbortSignal {
      return this.abort.signal;
    }

    protected async prepare(batch: readonly EventEnvelope[]): Promise<EventEnvelope[]> {
      const attempt = this.attempts.push(performance.now()) - 1;
      this.seen.push(batch.map((e) => e.seq));
      await this.beforePrepare?.();
      if (this.failAttempts.has(attempt)) throw new Error(`prepare failed (attempt ${attempt})`);
      return [...batch];
    }

    protected async apply(m: EntityManager, batch: EventEnvelope[]): Promise<void> {
      for (const e of batch) {
        await m.query('INSERT INTO applied (consumer, stream, seq, replica) VALUES ($1, $2, $3, $4)', [this.name, e.stream, e.seq, this.replica]);
      }
      await this.afterWrite?.(m, batch);
    }
  }

  beforeAll(async () => {
    fixture = await openEventLogFixture('consumer', 12, log);
    ({ db, dataSource, notifier, events } = fixture);
    await dataSource.query('CREATE TABLE applied (consumer text NOT NULL, stream text NOT NULL, seq bigint NOT NULL, replica text NOT NULL)');
  });

  afterAll(() => fixture?.close());

  /** Appends `n` events to `stream` in one transaction. */
  async function append(stream: string, n: number): Promise<void> {
    await dataSource.transaction(async (m) => {
      for (let i = 0; i < n; i++) await events.append(m, { stream, key: 'k', type: 'TEST', payload: { i } });
    });
  }

  async function appliedSeqs(consumer: string): Promise<number[]> {
    const rows = (await dataSource.query('SELECT seq FROM applied WHERE consumer = $1 ORDER BY seq', [consumer])) as { seq: string }[];
    return rows.map((r) => Number(r.seq));
  }

  async function cursorRow(consumer: string): Promise<{ stream: string; position: number } | undefined> {
    const [row] = (await dataSource.query('SELECT stream, position FROM event_consumer_cursors WHERE consumer = $1', [consumer])) as { stream: string; position: string }[];
    return row && { stream: row.stream, position: Number(row.position) };
  }

  it('reads batches of 50 by default, returns the total from catchUp and moves position() to the last applied seq', async () => {
    await append('defaults', 120);
    const onCommitted = jest.fn();
    const c = new Recorder({ name: 'defaults-c', stream: 'defaults', onCommitted });
    expect(await c.position()).toBe(0);
    expect(await c.catchUp()).toBe(120);
    expect(c.seen.map((b) => b.length)).toEqual([50, 50, 20]);
    expect(c.seen.flat()).toEqual(range(1, 120));
    expect(await c.position()).toBe(120);
    expect(await cursorRow('defaults-c')).toEqual({ stream: 'defaults', position: 120 });
    expect(await appliedSeqs('defaults-c')).toEqual(range(1, 120));
    // Once per committed batch; an empty step commits nothing and calls nothing.
    expect(onCommitted).toHaveBeenCalledTimes(3);
    expect(await c.catchUp()).toBe(0);
    expect(onCommitted).toHaveBeenCalledTimes(3);
    expect(c.seen).toHaveLength(3);
  });

  it('honours batchSize and reads on the batch transaction (a pool of one connection does not deadlock)', async () => {
    await append('small', 7);
    const { dataSource: single } = createDataSource({ url: db.url, entities: [], migrations: [], migrationsTableName: 'consumer_test_migrations', log, poolSize: 1 });
    await single.initialize();
    try {
      const c = new Recorder({ name: 'small-c', stream: 'small', batchSize: 3, dataSource: single, events: new EventLog(single, notifier) });
      expect(await within(5_000, 'catchUp on one connection', c.catchUp())).toBe(7);
      expect(c.seen).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
    } finally {
      await single.destroy();
    }
  });

  it("starts at seq 0 by default, and after the stream's current last_seq with startAt 'end'", async () => {
    await append('positioned', 5);
    await append('positioned-other', 9);
    const fromStart = new Recorder({ name: 'pos-start', stream: 'positioned' });
    expect(await fromStart.position()).toBe(0);
    const fromEnd = new Recorder({ name: 'pos-end', stream: 'positioned', startAt: 'end' });
    // The consumer's own stream's last_seq (not another stream's).
    expect(await fromEnd.position()).toBe(5);
    expect(await fromEnd.catchUp()).toBe(0);
    await append('positioned', 2);
    expect(await fromEnd.catchUp()).toBe(2);
    expect(fromEnd.seen).toEqual([[6, 7]]);
    expect(await fromStart.catchUp()).toBe(7);

    const empty = new Recorder({ name: 'pos-empty', stream: 'never-written', startAt: 'end' });
    expect(await empty.position()).toBe(0);
    expect(await cursorRow('pos-empty')).toEqual({ stream: 'never-written', position: 0 });
  });

  it('keeps an existing cursor row: a new instance with the same name resumes, whatever its startAt', async () => {
    await append('resume', 5);
    const first = new Recorder({ name: 'resume-c', stream: 'resume', batchSize: 3 });
    await expect(first.catchUp()).resolves.toBe(5);
    await append('resume', 2);
    const again = new Recorder({ name: 'resume-c', stream: 'resume' });
    expect(await again.position()).toBe(5);
    expect(await again.catchUp()).toBe(2);
    expect(again.seen).toEqual([[6, 7]]);
    await append('resume', 3);
    const atEnd = new Recorder({ name: 'resume-c', stream: 'resume', startAt: 'end' });
    expect(await atEnd.position()).toBe(7);
    expect(await atEnd.catchUp()).toBe(3);
  });

  it('inserts the cursor row once per instance: later position() calls issue one query each', async () => {
    const c = new Recorder({ name: 'once-c', stream: 'once' });
    await c.position();
    const spy = jest.spyOn(dataSource, 'query');
    try {
      await c.position();
      await c.position();
      expect(spy).toHaveBeenCalledTimes(2);
      expect(spy.mock.calls.every(([sql]) => String(sql).startsWith('SELECT position'))).toBe(true);
    } finally {
      spy.mockRestore();
    }
  });

  it('rejects catchUp on the first failed batch, leaving neither its partial writes nor a moved cursor', async () => {
    await append('failing', 5);
    const onCommitted = jest.fn();
    const c = new Recorder({ name: 'failing-c', stream: 'failing', batchSize: 2, onCommitted });
    c.afterWrite = async (_m, batch) => {
      if (batch.some((e) => e.seq === 3)) throw new Error('apply failed after writing');
    };
    await expect(c.catchUp()).rejects.toThrow('apply failed after writing');
    expect(await c.position()).toBe(2);
    expect(await appliedSeqs('failing-c')).toEqual([1, 2]);
    expect(onCommitted).toHaveBeenCalledTimes(1);
    c.afterWrite = undefined;
    expect(await c.catchUp()).toBe(3);
    expect(await appliedSeqs('failing-c')).toEqual(range(1, 5));
    expect(onCommitted).toHaveBeenCalledTimes(3);
  });

  it('start() resolves with the cursor row in place, follows live until stop(), and a second start() adds no loop', async () => {
    const own = new EventNotifier({ url: db.url, log });
    await append('live', 3);
    const c = new Recorder({ name: 'live-c', stream: 'live', startAt: 'end', notifier: own });
    const tickets = jest.spyOn(own, 'ticket');
    try {
      await c.start();
      expect(await cursorRow('live-c')).toEqual({ stream: 'live', position: 3 });
      await c.start();
      await append('live', 2);
      await until('live events applied', async () => (await appliedSeqs('live-c')).length === 2);
      expect(await appliedSeqs('live-c')).toEqual([4, 5]);
      await sleep(100);
      // One loop: one ticket per pass (the idle wait, the batch, the wait again; one more if the commit's
      // two notifications wake it apart); two loops take at least six.
      const passes = tickets.mock.calls.length;
      expect(passes).toBeLessThanOrEqual(4);
      expect(c.signal.aborted).toBe(false);
      await within(2_000, 'stop', c.stop());
      expect(c.signal.aborted).toBe(true);
      await append('live', 1);
      await sleep(150);
      expect(await appliedSeqs('live-c')).toEqual([4, 5]);
    } finally {
      tickets.mockRestore();
      await c.stop();
      await own.stop();
    }
  });

  it('catches up a backlog larger than a batch from the loop without waiting for a notification, then idles without polling', async () => {
    await append('backlog', 120);
    const c = new Recorder({ name: 'backlog-c', stream: 'backlog' });
    const reads = jest.spyOn(events, 'read');
    try {
      await c.start();
      await until('backlog applied', async () => (await c.position()) === 120, 5_000);
      // The pass after the last batch reads once more and finds nothing; then the loop waits.
      await sleep(100);
      const before = reads.mock.calls.length;
      await sleep(200);
      expect(reads.mock.calls.length - before).toBe(0);
    } finally {
      reads.mockRestore();
      await c.stop();
    }
  });

  it('retries a failed batch from the cursor after 200 ms, then 400 ms, logging the consumer and stream', async () => {
    await append('retry-default', 1);
    const c = new Recorder({ name: 'retry-default-c', stream: 'retry-default' });
    c.failAttempts = new Set([0, 1]);
    const errors = jest.spyOn(log, 'error');
    try {
      await c.start();
      await until('applied after two failures', async () => (await appliedSeqs('retry-default-c')).length === 1);
      const [a, b, d] = c.attempts as [number, number, number];
      // Lower bounds are the delays; upper bounds only tell them from a jump to the 5 s cap (timers run
      // late on a loaded machine, never early).
      expect(b - a).toBeGreaterThanOrEqual(190);
      expect(b - a).toBeLessThan(2_500);
      expect(d - b).toBeGreaterThanOrEqual(390);
      expect(d - b).toBeLessThan(2_500);
      expect(c.seen).toEqual([[1], [1], [1]]);
      expect(errors).toHaveBeenCalledTimes(2);
      expect(errors).toHaveBeenCalledWith(
        expect.objectContaining({ err: expect.any(Error), consumer: 'retry-default-c', stream: 'retry-default' }),
        'a consumer batch failed; retrying from the durable cursor',
      );
    } finally {
      errors.mockRestore();
      await c.stop();
    }
  });

  it('doubles the retry delay from retryDelayMs and resets it after a successful batch', async () => {
    await append('retry-reset', 1);
    const c = new Recorder({ name: 'retry-reset-c', stream: 'retry-reset', retryDelayMs: 100 });
    // Attempts 0–2 fail (100, 200, 400 ms apart), 3 succeeds; then 4 fails and 5 follows after 100 ms
    // again, not the 800 ms a delay kept from before the success would take.
    c.failAttempts = new Set([0, 1, 2, 4]);
    try {
      await c.start();
      await until('first event applied', async () => (await c.position()) === 1);
      await append('retry-reset', 1);
      await until('second event applied', async () => (await c.position()) === 2);
      const gap = (i: number) => c.attempts[i + 1]! - c.attempts[i]!;
      expect(c.attempts).toHaveLength(6);
      expect(gap(0)).toBeGreaterThanOrEqual(95);
      expect(gap(1)).toBeGreaterThanOrEqual(195);
      expect(gap(2)).toBeGreaterThanOrEqual(395);
      expect(gap(2)).toBeLessThan(2_500);
      expect(gap(4)).toBeGreaterThanOrEqual(95);
      expect(gap(4)).toBeLessThan(650);
    } finally {
      await c.stop();
    }
  });

  it('caps the retry delay at 5 s', async () => {
    await append('retry-cap', 1);
    const c = new Recorder({ name: 'retry-cap-c', stream: 'retry-cap', retryDelayMs: 4_000 });
    c.failAttempts = new Set([0, 1]);
    try {
      await c.start();
      await until('applied after 4 s + 5 s', async () => (await c.position()) === 1, 15_000);
      const [a, b, d] = c.attempts as [number, number, number];
      expect(b - a).toBeGreaterThanOrEqual(3_950);
      // 5 s, not the 8 s the doubling would take.
      expect(d - b).toBeGreaterThanOrEqual(4_950);
      expect(d - b).toBeLessThan(6_500);
    } finally {
      await c.stop();
    }
  });

  it('stop() ends a retry wait at once and logs nothing for a batch failed by the abort', async () => {
    await append('stop-retry', 1);
    const c = new Recorder({ name: 'stop-retry-c', stream: 'stop-retry', retryDelayMs: 10_000 });
    c.failAttempts = new Set([0]);
    await c.start();
    await until('first attempt failed', () => c.attempts.length === 1);
    await sleep(50);
    const stopped = performance.now();
    await within(1_000, 'stop during the retry wait', c.stop());
    expect(performance.now() - stopped).toBeLessThan(5_000);

    // A prepare that fails because of the abort is not an error.
    await append('stop-abort', 1);
    const d = new Recorder({ name: 'stop-abort-c', stream: 'stop-abort' });
    d.beforePrepare = () =>
      new Promise((_, reject) => d.signal.addEventListener('abort', () => reject(new Error('aborted fetch')), { once: true }));
    const errors = jest.spyOn(log, 'error');
    try {
      await d.start();
      await until('prepare in flight', () => d.attempts.length === 1);
      await within(1_000, 'stop', d.stop());
      expect(errors).not.toHaveBeenCalled();
      expect(await d.position()).toBe(0);
    } finally {
      errors.mockRestore();
    }
  });

  it('stop() waits for an in-flight batch, which commits whole', async () => {
    await append('inflight', 4);
    const c = new Recorder({ name: 'inflight-c', stream: 'inflight' });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let applyDone = false;
    let applying = false;
    c.afterWrite = async () => {
      applying = true;
      await gate;
      applyDone = true;
    };
    await c.start();
    await until('apply in flight', () => applying);
    const stopping = c.stop();
    await sleep(50);
    release();
    await within(2_000, 'stop', stopping);
    expect(applyDone).toBe(true);
    expect(await c.position()).toBe(4);
    expect(await appliedSeqs('inflight-c')).toEqual([1, 2, 3, 4]);
  });

  it('reads nothing when stopped while waiting for the claim another replica holds', async () => {
    await append('claimed', 3);
    const c = new Recorder({ name: 'claimed-c', stream: 'claimed' });
    expect(await c.position()).toBe(0);
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query("SELECT position FROM event_consumer_cursors WHERE consumer = 'claimed-c' FOR UPDATE");
      await c.start();
      await until('consumer waiting on the lock', async () => (await dataSource.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()")).length > 0);
      const stopping = c.stop();
      await sleep(50);
      await holder.query('COMMIT');
      await within(2_000, 'stop', stopping);
      expect(c.seen).toEqual([]);
      expect(await c.position()).toBe(0);
      expect(await appliedSeqs('claimed-c')).toEqual([]);
    } finally {
      await holder.end();
    }
  });

  it('processes each event exactly once across two replicas sharing a name, concurrently', async () => {
    await append('shared', 200);
    const a = new Recorder({ name: 'shared-c', stream: 'shared', batchSize: 7 }, 'a');
    const b = new Recorder({ name: 'shared-c', stream: 'shared', batchSize: 7 }, 'b');
    for (const r of [a, b]) r.beforePrepare = () => sleep(1);
    const [na, nb] = await Promise.all([a.catchUp(), b.catchUp()]);
    expect(na + nb).toBe(200);
    expect(await appliedSeqs('shared-c')).toEqual(range(1, 200));

    // Live, too: both loops running, more events arriving.
    await Promise.all([a.start(), b.start()]);
    for (let i = 0; i < 10; i++) await append('shared', 10);
    await until('live shared events applied', async () => (await a.position()) === 300);
    await Promise.all([a.stop(), b.stop()]);
    expect(await appliedSeqs('shared-c')).toEqual(range(1, 300));
  });

  it('ends its loop when the notifier stops, without polling', async () => {
    const own = new EventNotifier({ url: db.url, log });
    const c = new Recorder({ name: 'notifier-stop-c', stream: 'notifier-stop', notifier: own });
    const reads = jest.spyOn(events, 'read');
    try {
      await c.start();
      await sleep(100);
      await own.stop();
      const loop = Reflect.get(c, 'loop') as Promise<void>;
      await expect(within(1_000, 'loop', loop)).resolves.toBeUndefined();
      const before = reads.mock.calls.length;
      await sleep(100);
      expect(reads.mock.calls.length - before).toBe(0);
      expect(c.signal.aborted).toBe(false);
    } finally {
      reads.mockRestore();
      await c.stop();
    }
  });
});
