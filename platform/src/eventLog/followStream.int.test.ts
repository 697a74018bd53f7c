import { EVENTS_CHANNEL, MeshError, type EventEnvelope } from '@keelson/schema';
import { metricsRegistry, silentLogger } from '@keelson/service';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db';
import { sleep } from '../../../test/support/until';
import { followStream, type StreamReader } from './followStream';
import { EventNotifier } from './notifier';

jest.setTimeout(20_000);

const ev = (stream: string, seq: number) => ({ stream, seq, key: 'k', type: 'T', payload: { seq } }) as unknown as EventEnvelope;

async function lagOf(stream: string): Promise<Array<{ consumer: string; lag: number }>> {
  const metric = metricsRegistry().getSingleMetric('keelson_event_log_lag_events')!;
  const { values } = await metric.get();
  return values.filter((v) => v.labels.stream === stream).map((v) => ({ consumer: String(v.labels.consumer), lag: v.value }));
}

describe('followStream', () => {
  let db: TestDatabase;
  let notifier: EventNotifier;

  beforeAll(async () => {
    db = await createTestDatabase('keelson_follow');
    notifier = new EventNotifier({ url: db.url, log: silentLogger() });
  });
  afterAll(async () => {
    await notifier.stop();
    await db.drop();
  });

  /** A reader over an in-memory list of events, recording its reads. */
  function memoryReader(stream: string, store: EventEnvelope[], extra: Partial<StreamReader<unknown>> = {}) {
    const reads: number[] = [];
    const reader: StreamReader<unknown> = {
      read: async (after) => {
        reads.push(after);
        return store.filter((e) => e.seq > after).slice(0, 2);
      },
      ...extra,
    };
    return { reader, reads };
  }

  it('replays then follows live in order, calling seen per event before the next read, and reports lag', async () => {
    const stream = 'fs-live';
    const store = [ev(stream, 1), ev(stream, 2), ev(stream, 3)];
    const seen: number[] = [];
    const { reader, reads } = memoryReader(stream, store, { seen: (e) => seen.push(e.seq) });
    const it = followStream(notifier, stream, 0, reader);
    expect(it[Symbol.asyncIterator]()).toBe(it);
    expect((await it.next()).value.seq).toBe(1);
    expect(seen).toEqual([1]);
    expect(await lagOf(stream)).toEqual([{ consumer: `${stream} follower`, lag: 1 }]);
    expect((await it.next()).value.seq).toBe(2);
    expect(reads).toEqual([0]);
    expect((await it.next()).value.seq).toBe(3);
    expect(reads).toEqual([0, 2]);
    const pending = it.next();
    await sleep(50);
    store.push(ev(stream, 4));
    await db.query('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, `${stream}:9`]);
    expect((await pending).value.seq).toBe(4);
    expect(seen).toEqual([1, 2, 3, 4]);
    expect(await lagOf(stream)).toEqual([{ consumer: `${stream} follower`, lag: 5 }]);
    expect(await it.return!()).toEqual({ value: undefined, done: true });
    expect(await it.next()).toEqual({ value: undefined, done: true });
    expect(await lagOf(stream)).toEqual([]);
  });

  it('a filtered reader lags by its buffer, under its own consumer name', async () => {
    const stream = 'fs-filtered';
    const store = [ev(stream, 5), ev(stream, 8)];
    const { reader } = memoryReader(stream, store, { filtered: true, consumer: 'mine' });
    const it = followStream(notifier, stream, 0, reader);
    await it.next();
    expect(await lagOf(stream)).toEqual([{ consumer: 'mine', lag: 1 }]);
    await it.next();
    expect(await lagOf(stream)).toEqual([{ consumer: 'mine', lag: 0 }]);
    await expect(it.throw!(new Error('boom'))).rejects.toThrow('boom');
    expect(await lagOf(stream)).toEqual([]);
    expect(await it.next()).toEqual({ value: undefined, done: true });
  });

  it('a read failure ends it with SERVICE_UNAVAILABLE naming the stream', async () => {
    const stream = 'fs-fail';
    const it = followStream(notifier, stream, 3, { read: () => Promise.reject(new Error('db down')) });
    const err = await it.next().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MeshError);
    expect((err as MeshError).code).toBe('SERVICE_UNAVAILABLE');
    expect((err as Error).message).toBe(`reading stream ${stream} failed (db down); resume with your last cursor`);
    expect(await lagOf(stream)).toEqual([]);
    expect(await it.next()).toEqual({ value: undefined, done: true });
  });

  it('ends when the notifier stops while it waits', async () => {
    const own = new EventNotifier({ url: db.url, log: silentLogger() });
    const it = followStream(own, 'fs-stop', 0, { read: async () => [] });
    const pending = it.next();
    await sleep(50);
    await own.stop();
    expect(await pending).toEqual({ value: undefined, done: true });
  });
});
