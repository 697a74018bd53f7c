import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRibHost } from '@keelson/host';
import { staticConfigPort } from '@keelson/host-doubles';
import { streams } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import type { Rib } from '@keelson/ribs-contract';
import { PgSnapshotStore } from '../src/snapshot/pgSnapshotStore';
import { SnapshotFrameStream } from '../src/snapshot/snapshotFrames';
import { createTestDatabase, openRibsDb, type RibsDb, type TestDatabase } from './support/ribsDb';

describe('PgSnapshotStore', () => {
  let db: TestDatabase;
  let a: RibsDb;
  let b: RibsDb;

  beforeAll(async () => {
    db = await createTestDatabase();
    [a, b] = [await openRibsDb(db.url), await openRibsDb(db.url)];
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await db?.drop();
  });

  const append = (store: PgSnapshotStore, key: string, n: number) =>
    store.append({ key, ribId: 'demo', payload: { n }, composedAt: new Date().toISOString() });

  it('numbers versions 1, 2, 3… with no repeat or gap across two stores on separate pools appending concurrently', async () => {
    const one = new PgSnapshotStore(a.dataSource, a.events);
    const two = new PgSnapshotStore(b.dataSource, b.events);
    const records = await Promise.all(Array.from({ length: 40 }, (_, i) => append(i % 2 ? one : two, 'rib:demo', i)));
    expect(records.map((r) => r.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    expect((await one.latest('rib:demo'))?.version).toBe(40);
    // Every version is an event, and the stream orders a key's versions as their numbers do.
    const events = await a.events.read<{ key: string; version: number }>(streams.snapshots, 0, { key: 'rib:demo' });
    expect(events.map((e) => e.payload.version)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    // Each record carries the cursor of its own event.
    const byVersion = new Map(events.map((e) => [e.payload.version, e.cursor]));
    for (const r of records) expect(r.cursor).toBe(byVersion.get(r.version));
  });

  it('writes a version and its event atomically: a failed append leaves neither', async () => {
    const store = new PgSnapshotStore(a.dataSource, a.events);
    const before = await a.events.read(streams.snapshots, 0, { key: 'rib:demo:atomic' });
    // An unserializable composedAt fails inside the transaction, after the head and the event were written.
    await expect(store.append({ key: 'rib:demo:atomic', ribId: 'demo', payload: {}, composedAt: 'not a date' })).rejects.toThrow();
    expect(await a.events.read(streams.snapshots, 0, { key: 'rib:demo:atomic' })).toEqual(before);
    expect(await store.latest('rib:demo:atomic')).toBeUndefined();
    expect((await append(store, 'rib:demo:atomic', 1)).version).toBe(1);
  });

  it('keeps the newest versions of a key and prunes older ones (their events stay)', async () => {
    const store = new PgSnapshotStore(a.dataSource, a.events, 3);
    for (let i = 1; i <= 5; i++) await append(store, 'rib:demo:pruned', i);
    const kept = await store.versions([1, 2, 3, 4, 5].map((version) => ({ key: 'rib:demo:pruned', version })));
    expect(kept.map((r) => r.version).sort()).toEqual([3, 4, 5]);
    expect((await a.events.read(streams.snapshots, 0, { key: 'rib:demo:pruned' })).length).toBe(5);
  });

  it('streams the latest frame of each key, then every later one, resumable from any frame cursor', async () => {
    const store = new PgSnapshotStore(a.dataSource, a.events);
    await append(store, 'rib:demo:x', 1);
    await append(store, 'rib:demo:y', 1);
    await append(store, 'rib:demo:x', 2);
    const stream = new SnapshotFrameStream(store, b.events, new Set(['rib:demo:x', 'rib:demo:y', 'rib:demo:never']), undefined);
    const first = [(await stream.next()).value, (await stream.next()).value];
    expect(first.map((f) => [f.key, f.version, (f.loaded?.payload as { n: number }).n])).toEqual([
      ['rib:demo:y', 1, 1],
      ['rib:demo:x', 2, 2],
    ]);
    const pending = stream.next();
    await append(store, 'rib:demo:other', 1);
    await append(store, 'rib:demo:y', 2);
    const live = (await pending).value;
    expect([live.key, live.version, live.loaded]).toEqual(['rib:demo:y', 2, undefined]);
    await stream.return();

    const resumed = new SnapshotFrameStream(store, b.events, new Set(['rib:demo:x', 'rib:demo:y']), first[0]!.cursor);
    const replay = [(await resumed.next()).value, (await resumed.next()).value];
    expect(replay.map((f) => [f.key, f.version])).toEqual([
      ['rib:demo:x', 2],
      ['rib:demo:y', 2],
    ]);
    await resumed.return();
  });

  it('ends a stream that is returned while it waits', async () => {
    const store = new PgSnapshotStore(a.dataSource, a.events);
    const stream = new SnapshotFrameStream(store, a.events, new Set(['rib:demo:quiet']), undefined);
    const waiting = stream.next();
    await new Promise((r) => setTimeout(r, 100));
    await stream.return();
    expect(await waiting).toEqual({ value: undefined, done: true });
  });

  it('through the host: a validator rejection drops the payload and the persisted prior version stands, with no frame', async () => {
    let next: unknown = { ok: 1 };
    const rib: Rib = {
      id: 'demo',
      displayName: 'Demo',
      registerTools(ctx) {
        ctx.getSnapshotManager!().register('rib:demo:validated', () => next, {
          validate: (data) => {
            if (typeof (data as { ok?: unknown }).ok !== 'number') throw new Error('ok must be a number');
            return data;
          },
        });
        return [];
      },
    };
    const home = mkdtempSync(join(tmpdir(), 'keelson-home-'));
    const host = await createRibHost({ available: { demo: rib }, env: {}, home, logger: silentLogger(), config: staticConfigPort({}), snapshotStore: new PgSnapshotStore(a.dataSource, a.events) });
    try {
      expect(await host.recomposeSnapshot('rib:demo:validated')).toMatchObject({ status: 'published', frame: { version: 1 } });
      next = { ok: 'no' };
      expect(await host.recomposeSnapshot('rib:demo:validated')).toMatchObject({ status: 'rejected', error: 'ok must be a number' });
      // Read back through the other pool: the prior version is what Postgres holds, and no event was written.
      const other = new PgSnapshotStore(b.dataSource, b.events);
      expect(await other.latest('rib:demo:validated')).toMatchObject({ version: 1, payload: { ok: 1 } });
      expect((await b.events.read(streams.snapshots, 0, { key: 'rib:demo:validated' })).length).toBe(1);
      next = { ok: 2 };
      expect(await host.recomposeSnapshot('rib:demo:validated')).toMatchObject({ status: 'published', frame: { version: 2, payload: { ok: 2 } } });
    } finally {
      await host.dispose();
      rmSync(home, { recursive: true, force: true });
    }
  });
});
