import type { SnapshotFrame } from '@keelson/ribs-contract';
import type { SnapshotAppend, SnapshotRecord, SnapshotStore } from '../src/ports/snapshotStore';
import type { ManifestInvalidation } from '../src/manifest/manifestEvents';
import { rib, sleep, startHost } from './support/quietHost';

describe('composers', () => {
  it('are lazy: composeBundle never runs at boot unless something recomposes', async () => {
    const composeBundle = jest.fn(async () => ({ rows: [] }));
    const { host, store } = await startHost([rib('demo', { composeBundle })]);
    await host.whenWarm();
    expect(composeBundle).not.toHaveBeenCalled();
    expect(store.frames).toEqual([]);
    expect(host.snapshotKeys()).toEqual(['rib:demo']);

    await expect(host.recomposeSnapshot('rib:demo')).resolves.toMatchObject({ status: 'published', frame: { key: 'rib:demo', version: 1 } });
    expect(composeBundle).toHaveBeenCalledTimes(1);
  });

  it('warm up when a rib recomposes rib.id from registerTools, after composeBundle is registered', async () => {
    let warmed: Promise<SnapshotFrame | undefined> | undefined;
    const demo = rib('demo', {
      registerTools(ctx) {
        warmed = ctx.getSnapshotManager!().recompose(demo.id);
        return [];
      },
      composeBundle: async () => ({ status: 'warm' }),
    });
    const { host, store } = await startHost([demo]);
    await host.whenWarm();
    await expect(warmed).resolves.toMatchObject({ key: 'rib:demo', version: 1, payload: { status: 'warm' } });
    expect(store.frames.map((f) => f.key)).toEqual(['rib:demo']);
  });

  it('publish every new version to the store with increasing versions', async () => {
    let n = 0;
    const { host, store } = await startHost([rib('demo', { composeBundle: async () => ({ n: ++n }) })]);
    for (let i = 0; i < 3; i++) await host.recomposeSnapshot('rib:demo');
    expect(store.frames.map((f) => [f.version, f.payload])).toEqual([
      [1, { n: 1 }],
      [2, { n: 2 }],
      [3, { n: 3 }],
    ]);
    await expect(host.readSnapshot('rib:demo')).resolves.toMatchObject({ version: 3, ribId: 'demo' });
  });

  it('share one compose between concurrent recomposes of a key', async () => {
    let calls = 0;
    const { host } = await startHost([rib('demo', { composeBundle: async () => (await sleep(20), ++calls) })]);
    const [a, b] = await Promise.all([host.recomposeSnapshot('rib:demo'), host.recomposeSnapshot('rib:demo')]);
    expect(calls).toBe(1);
    expect(a).toEqual(b);
  });

  it('keep the prior version when the composer throws', async () => {
    let fail = false;
    const { host, warnings } = await startHost([
      rib('demo', {
        composeBundle: async () => {
          if (fail) throw new Error('git is gone');
          return { ok: true };
        },
      }),
    ]);
    await host.recomposeSnapshot('rib:demo');
    fail = true;
    await expect(host.recomposeSnapshot('rib:demo')).resolves.toEqual({ status: 'failed', error: 'git is gone' });
    await expect(host.readSnapshot('rib:demo')).resolves.toMatchObject({ version: 1, payload: { ok: true } });
    expect(warnings).toContainEqual(expect.objectContaining({ rule: 'composer-failed', ribId: 'demo' }));
  });

  it('answer unregistered for a key nobody composes', async () => {
    const { host } = await startHost([rib('demo')]);
    await expect(host.recomposeSnapshot('rib:demo')).resolves.toEqual({ status: 'unregistered' });
  });
});

describe('validators', () => {
  it('drop an invalid payload and keep the prior one', async () => {
    let payload: unknown = { count: 1 };
    const demo = rib('demo', {
      registerTools(ctx) {
        ctx.getSnapshotManager!().register('rib:demo:count', () => payload, {
          validate: (data) => {
            if (typeof (data as { count: unknown }).count !== 'number') throw new Error('count is a number');
            return data;
          },
        });
        return [];
      },
    });
    const { host } = await startHost([demo]);
    const snapshots = host.context('demo')!.getSnapshotManager!();
    await expect(snapshots.recompose('rib:demo:count')).resolves.toMatchObject({ version: 1 });
    payload = { count: 'lots' };
    await expect(snapshots.recompose('rib:demo:count')).resolves.toBeUndefined();
    await expect(host.recomposeSnapshot('rib:demo:count')).resolves.toEqual({ status: 'rejected', error: 'count is a number' });
    await expect(snapshots.publish('rib:demo:count', { count: null })).resolves.toBeUndefined();
    await expect(snapshots.read('rib:demo:count')).resolves.toMatchObject({ version: 1, payload: { count: 1 } });
  });

  it('store what the validator returns (a zod parse with defaults applied)', async () => {
    const demo = rib('demo', {
      registerTools(ctx) {
        ctx.getSnapshotManager!().register('rib:demo:x', () => ({ a: 1 }), { validate: (d) => ({ ...(d as { a: number }), b: 2 }) });
        return [];
      },
    });
    const { host } = await startHost([demo]);
    await expect(host.recomposeSnapshot('rib:demo:x')).resolves.toMatchObject({ frame: { payload: { a: 1, b: 2 } } });
  });

  it('reject a payload that is not plain JSON', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const { host } = await startHost([rib('demo', { composeBundle: async () => cyclic })]);
    await expect(host.recomposeSnapshot('rib:demo')).resolves.toMatchObject({ status: 'rejected', error: expect.stringMatching(/JSON/) });
  });
});

describe('the snapshot store port', () => {
  it('reports a failing store as failed, without a version', async () => {
    const broken: SnapshotStore = {
      append: async (_next: SnapshotAppend): Promise<SnapshotRecord> => {
        throw new Error('database is down');
      },
      latest: async () => undefined,
    };
    const { host } = await startHost([rib('demo', { composeBundle: async () => 1 })], { snapshotStore: broken });
    await expect(host.recomposeSnapshot('rib:demo')).resolves.toEqual({ status: 'failed', error: 'snapshot store failed: database is down' });
  });

  it('lets a rib register a key only once until it unregisters it', async () => {
    const { host } = await startHost([rib('demo')]);
    const snapshots = host.context('demo')!.getSnapshotManager!();
    const unregister = snapshots.register('rib:demo:a', () => 1);
    expect(() => snapshots.register('rib:demo:a', () => 2)).toThrow(/already has a composer/);
    unregister();
    expect(() => snapshots.register('rib:demo:a', () => 2)).not.toThrow();
  });
});

describe('manifest invalidation', () => {
  const withSurface = () =>
    rib('demo', {
      surfaces: [{ id: 'main', title: 'Main', layout: { rows: [{ columns: [{ key: 'rib:demo' }] }] } }],
    });

  it('is nudged by registerRegion, its unregister handle and invalidateManifest', async () => {
    const { host } = await startHost([withSurface()]);
    const seen: ManifestInvalidation['reason'][] = [];
    host.onManifestInvalidated((e) => seen.push(e.reason));
    const ctx = host.context('demo')!;
    const unregister = ctx.registerRegion!('main', { key: 'rib:demo:room-1', title: 'Room 1', group: 'rooms', groupTitle: 'Rooms' });
    ctx.invalidateManifest!();
    unregister();
    unregister();
    expect(seen).toEqual(['region-registered', 'rib-invalidated', 'region-unregistered']);
  });

  it('serves runtime regions after the declared rows, groups kept contiguous', async () => {
    const { host } = await startHost([withSurface()]);
    const ctx = host.context('demo')!;
    ctx.registerRegion!('main', { key: 'rib:demo:room-1', group: 'rooms', groupTitle: 'Rooms' });
    ctx.registerRegion!('main', { key: 'rib:demo:lens-1', group: 'lenses' });
    ctx.registerRegion!('main', { key: 'rib:demo:room-2', group: 'rooms' });
    const surface = (await host.ribSummary('demo'))!.surfaces[0]!;
    expect(surface.layout.rows.map((r) => [(r.columns[0] as { key: string }).key, r.zoneTitle])).toEqual([
      ['rib:demo', undefined],
      ['rib:demo:room-1', 'Rooms'],
      ['rib:demo:room-2', 'Rooms'],
      ['rib:demo:lens-1', undefined],
    ]);
    expect(host.surfaceRegions().filter((r) => r.dynamic).map((r) => r.region.key)).toEqual(['rib:demo:room-1', 'rib:demo:room-2', 'rib:demo:lens-1']);
  });

  it('refuses a region on an undeclared surface, outside the namespace, or malformed', async () => {
    const { host } = await startHost([withSurface()]);
    const ctx = host.context('demo')!;
    expect(() => ctx.registerRegion!('other', { key: 'rib:demo:x' })).toThrow(/declares no surface 'other'/);
    expect(() => ctx.registerRegion!('main', { key: 'rib:good:x' })).toThrow(/outside rib 'demo''s namespace/);
    expect(() => ctx.registerRegion!('main', { key: 'rib:demo:x', cadenceMs: 5 })).toThrow(/region\.cadenceMs: cadenceMs is at least 30000/);
  });
});
