import { encodeCursor, type Caller } from '@keelson/schema';
import { metricsRegistry, runAsCaller, silentLogger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { openEventLogFixture, range, type EventLogFixture } from '../../../test/support/eventLogFixture';
import { untilTrue, within } from '../../../test/support/until';
import { cursorTableSql, moveCursorsToPlatform, restoreCursorsFromPlatform } from './cursorTables';
import { appendEvent, EventLog } from './eventLog';
import { EventNotifier } from './notifier';

// The integration project's `testTimeout` is not applied (jest-circus reads only the global one).
jest.setTimeout(60_000);

const log = silentLogger();

describe('EventLog and cursor tables: defaults, options and edges', () => {
  let dataSource: DataSource;
  let notifier: EventNotifier;
  let events: EventLog;
  let fixture: EventLogFixture | undefined;

  beforeAll(async () => {
    fixture = await openEventLogFixture('eventlog_edges', 6, log);
    ({ dataSource, notifier, events } = fixture);
  });

  afterAll(() => fixture?.close());

  async function append(stream: string, keys: string[]): Promise<void> {
    await dataSource.transaction(async (m) => {
      for (const key of keys) await events.append(m, { stream, key, type: 'TEST', payload: { key } });
    });
  }

  describe('read', () => {
    it('returns at most 500 events by default, and `limit` with or without a key', async () => {
      await append('limits', range(1, 502).map((i) => (i % 2 ? 'odd' : 'even')));
      const all = await events.read('limits', 0);
      expect(all.map((e) => e.seq)).toEqual(range(1, 500));
      expect((await events.read('limits', 0, { limit: 3 })).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect((await events.read('limits', 10, { key: 'odd', limit: 2 })).map((e) => e.seq)).toEqual([11, 13]);
      const odd = await events.read('limits', 0, { key: 'odd' });
      expect(odd).toHaveLength(251);
      expect(odd.every((e) => e.key === 'odd' && e.stream === 'limits')).toBe(true);
    });

    it("reads on the given transaction's connection: its own uncommitted events, with or without a key", async () => {
      await dataSource.transaction(async (m) => {
        await events.append(m, { stream: 'uncommitted', key: 'u', type: 'TEST', payload: {} });
        expect((await events.read('uncommitted', 0, { manager: m })).map((e) => e.seq)).toEqual([1]);
        expect((await events.read('uncommitted', 0, { manager: m, key: 'u' })).map((e) => e.seq)).toEqual([1]);
        expect(await events.read('uncommitted', 0)).toEqual([]);
      });
    });
  });

  describe('append', () => {
    it('notifies `<stream>:<seq>:<type>` (watchers hear the type), and refuses a stream name with a colon or none', async () => {
      const heard: Array<[string, number, string | undefined]> = [];
      const remove = notifier.watch({ event: (s, q, t) => s === 'typed' && heard.push([s, q, t]) });
      try {
        await notifier.ready();
        await dataSource.transaction((m) => events.append(m, { stream: 'typed', key: 'k:1', type: 'THING_HAPPENED', payload: {} }));
        await untilTrue('the typed event', () => heard.length >= 1);
        expect(heard).toEqual([['typed', 1, 'THING_HAPPENED']]);
        await expect(appendEvent(dataSource.manager, { stream: 'bad:name', key: 'k', type: 'T', payload: {} })).rejects.toThrow(/colon/);
        await expect(appendEvent(dataSource.manager, { stream: '', key: 'k', type: 'T', payload: {} })).rejects.toThrow(/colon/);
        expect(await events.read('bad:name', 0)).toEqual([]);
      } finally {
        remove();
      }
    });
    it('stores {} for an absent payload and returns the stored envelope', async () => {
      const event = await dataSource.transaction((m) => appendEvent(m, { stream: 'payloads', key: 'p', type: 'NONE', payload: undefined }));
      expect(event).toEqual({ cursor: encodeCursor(1), stream: 'payloads', seq: 1, key: 'p', type: 'NONE', payload: {}, at: expect.any(Date), actor: null });
      const [stored] = await events.read('payloads', 0);
      expect(stored).toEqual(event);
    });

    it("records the request's caller as actor, an explicit actor over it, and an explicit null as none", async () => {
      const caller: Caller = { subject: 'token:ci', kind: 'token', scopes: ['read'], tokenId: 't1' };
      const fromCaller = await runAsCaller(caller, () =>
        dataSource.transaction((m) => events.append(m, { stream: 'actors', key: 'a', type: 'T', payload: {} })),
      );
      expect(fromCaller.actor).toEqual({ subject: 'token:ci', kind: 'token' });
      const explicit = await runAsCaller(caller, () =>
        dataSource.transaction((m) => events.append(m, { stream: 'actors', key: 'a', type: 'T', payload: {}, actor: { subject: 'svc', kind: 'service' } })),
      );
      expect(explicit.actor).toEqual({ subject: 'svc', kind: 'service' });
      const none = await runAsCaller(caller, () => dataSource.transaction((m) => events.append(m, { stream: 'actors', key: 'a', type: 'T', payload: {}, actor: null })));
      expect(none.actor).toBeNull();
      const noCaller = await dataSource.transaction((m) => events.append(m, { stream: 'actors', key: 'a', type: 'T', payload: {} }));
      expect(noCaller.actor).toBeNull();
      expect((await events.read('actors', 0)).map((e) => e.actor)).toEqual([{ subject: 'token:ci', kind: 'token' }, { subject: 'svc', kind: 'service' }, null, null]);
    });
  });

  describe('tail', () => {
    it('does not share a read between tails of different keys woken by the same commit', async () => {
      await append('keyed-tails', ['a']);
      const start = encodeCursor(1);
      const all = events.tail<{ key: string }>('keyed-tails', start);
      const onlyA = events.tail<{ key: string }>('keyed-tails', start, { key: 'a' });
      const onlyB = events.tail<{ key: string }>('keyed-tails', start, { key: 'b' });
      try {
        const next = [all.next(), onlyA.next(), onlyB.next()];
        await new Promise((r) => setTimeout(r, 100));
        await append('keyed-tails', ['b', 'a']);
        const got = await within(5_000, 'tails', Promise.all(next));
        expect(got.map((r) => [r.value?.key, r.value?.seq])).toEqual([
          ['b', 2],
          ['a', 3],
          ['b', 2],
        ]);
      } finally {
        await Promise.all([all.return!(), onlyA.return!(), onlyB.return!()]);
      }
    });

    it('does not share a read between a whole-stream tail and a tail of the empty key', async () => {
      await append('empty-key-tails', ['x']);
      const start = encodeCursor(1);
      const all = events.tail<{ key: string }>('empty-key-tails', start);
      const onlyEmpty = events.tail<{ key: string }>('empty-key-tails', start, { key: '' });
      try {
        const next = [all.next(), onlyEmpty.next()];
        await new Promise((r) => setTimeout(r, 100));
        await append('empty-key-tails', ['b', '']);
        const got = await within(5_000, 'tails', Promise.all(next));
        expect(got.map((r) => [r.value?.key, r.value?.seq])).toEqual([
          ['b', 2],
          ['', 3],
        ]);
      } finally {
        await Promise.all([all.return!(), onlyEmpty.return!()]);
      }
    });
  });

  describe('tail lag', () => {
    async function lagOf(stream: string): Promise<{ consumer: string; lag: number }[]> {
      const { values } = await metricsRegistry().getSingleMetric('keelson_event_log_lag_events')!.get();
      return values
        .filter((v) => v.labels.stream === stream)
        .map((v) => ({ consumer: String(v.labels.consumer), lag: v.value }))
        .sort((a, b) => a.consumer.localeCompare(b.consumer));
    }

    /** Until the notifier has heard `stream` committed up to `seq`. */
    const waitForHead = (stream: string, seq: number) => untilTrue(`head of ${stream} at ${seq}`, () => notifier.headOf(stream) >= seq);

    it("counts a whole-stream tail's lag from the stream's head, a keyed tail's from its page, under '<stream> subscription' or its consumer", async () => {
      await notifier.ready();
      await append('lagging', ['a', 'b', 'a', 'b']);
      await waitForHead('lagging', 4);
      const whole = events.tail<{ key: string }>('lagging', null);
      const keyed = events.tail<{ key: string }>('lagging', null, { key: 'a', consumer: 'keyed reader' });
      try {
        expect((await whole.next()).value?.seq).toBe(1);
        expect((await keyed.next()).value?.seq).toBe(1);
        // Two more commits, heard but not read yet: the head is 6.
        await append('lagging', ['b', 'b']);
        await waitForHead('lagging', 6);
        // Whole stream: head 6 − cursor 1 (its page holds only 3). Keyed: what its page holds and it has
        // not delivered (seq 3), whatever the head.
        expect(await lagOf('lagging')).toEqual([
          { consumer: 'keyed reader', lag: 1 },
          { consumer: 'lagging subscription', lag: 5 },
        ]);
      } finally {
        await Promise.all([whole.return!(), keyed.return!()]);
      }
      expect(await lagOf('lagging')).toEqual([]);
    });
  });

  describe('cursor tables', () => {
    it('creates a table that fails a second CREATE, unless IF NOT EXISTS is asked for', async () => {
      await dataSource.query(cursorTableSql('edge_cursors_a'));
      await expect(dataSource.query(cursorTableSql('edge_cursors_a'))).rejects.toMatchObject({ code: '42P07' });
      await dataSource.query(cursorTableSql('edge_cursors_a', { ifNotExists: true }));
      expect(cursorTableSql('t', { ifNotExists: true })).toMatch(/^CREATE TABLE IF NOT EXISTS t \(/);
      expect(cursorTableSql('t')).toMatch(/^CREATE TABLE t \(/);
    });

    it('defaults position to 0 only with positionDefault, and fills updated_at', async () => {
      await dataSource.query(cursorTableSql('edge_cursors_b'));
      await expect(dataSource.query("INSERT INTO edge_cursors_b (consumer, stream) VALUES ('c', 's')")).rejects.toMatchObject({ code: '23502' });
      await dataSource.query(cursorTableSql('edge_cursors_c', { positionDefault: true }));
      await dataSource.query("INSERT INTO edge_cursors_c (consumer, stream) VALUES ('c', 's')");
      const [row] = (await dataSource.query('SELECT position, updated_at FROM edge_cursors_c')) as { position: string; updated_at: Date }[];
      expect(Number(row!.position)).toBe(0);
      expect(row!.updated_at).toBeInstanceOf(Date);
      await expect(dataSource.query("INSERT INTO edge_cursors_c (consumer, stream, position) VALUES ('c', 's', 1)")).rejects.toMatchObject({ code: '23505' });
    });

    it('moves cursors into event_consumer_cursors keeping the further position on a clash, drops the table, and restores by pattern', async () => {
      await dataSource.query(cursorTableSql('edge_pkg_cursors'));
      await dataSource.query(
        "INSERT INTO edge_pkg_cursors (consumer, stream, position) VALUES ('pkg-ahead', 's', 9), ('pkg-behind', 's', 2), ('pkg-new', 's', 4), ('other', 's', 7)",
      );
      await dataSource.query("INSERT INTO event_consumer_cursors (consumer, stream, position) VALUES ('pkg-ahead', 's', 5), ('pkg-behind', 's', 6)");
      for (const sql of moveCursorsToPlatform('edge_pkg_cursors')) await dataSource.query(sql);
      const moved = (await dataSource.query(
        "SELECT consumer, position::int AS position FROM event_consumer_cursors WHERE consumer IN ('pkg-ahead', 'pkg-behind', 'pkg-new', 'other') ORDER BY consumer",
      )) as { consumer: string; position: number }[];
      expect(moved).toEqual([
        { consumer: 'other', position: 7 },
        { consumer: 'pkg-ahead', position: 9 },
        { consumer: 'pkg-behind', position: 6 },
        { consumer: 'pkg-new', position: 4 },
      ]);
      expect(await dataSource.query("SELECT to_regclass('edge_pkg_cursors') AS t")).toEqual([{ t: null }]);

      for (const sql of restoreCursorsFromPlatform('edge_pkg_cursors', 'pkg-%', { positionDefault: true })) await dataSource.query(sql);
      const restored = (await dataSource.query('SELECT consumer, position::int AS position FROM edge_pkg_cursors ORDER BY consumer')) as { consumer: string; position: number }[];
      expect(restored).toEqual([
        { consumer: 'pkg-ahead', position: 9 },
        { consumer: 'pkg-behind', position: 6 },
        { consumer: 'pkg-new', position: 4 },
      ]);
      // The restored table has the asked-for default.
      await dataSource.query("INSERT INTO edge_pkg_cursors (consumer, stream) VALUES ('pkg-late', 's')");
      const restoredWithout = restoreCursorsFromPlatform('x', 'p%');
      expect(restoredWithout[0]).toBe(cursorTableSql('x'));
    });
  });
});
