import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@keelson/service';
import type { Rib, RibViewDescriptor } from '@keelson/ribs-contract';
import { gql, gqlData, subscribe, registerCredentials } from '../../../test/support/client';
import { startRibsSubgraph, type RunningRibs, type RibHostOverrides } from '../src/index';
import { createTestDatabase, type TestDatabase } from './support/ribsDb';
import { security, serviceCredentials } from '../../../test/support/auth';

// The ribs subgraph on its own (no gateway, no projects subgraph), spoken to as a client would.

const views: RibViewDescriptor[] = [{ key: 'rib:alpha', canvasKind: 'view', title: 'Alpha' }];
let composeFails = false;
const alpha: Rib = {
  id: 'alpha',
  displayName: 'Alpha',
  views,
  surfaces: [{ id: 'main', title: 'Alpha', layout: { rows: [{ columns: [{ key: 'rib:alpha', cadenceMs: 30_000 }, [{ key: 'rib:alpha:a' }, { key: 'rib:alpha:b' }]] }] } }],
  registerTools(ctx) {
    ctx.getSnapshotManager!().register('rib:alpha:flaky', () => {
      if (composeFails) throw new Error('the source is down');
      return { fine: true };
    });
    return [];
  },
  async composeBundle() {
    return { hello: 'world' };
  },
  onAction(action, ctx) {
    if (action.type === 'touch') {
      ctx.invalidateManifest!();
      return { ok: true };
    }
    if (action.type === 'region') {
      const remove = ctx.registerRegion!('main', { key: 'rib:alpha:runtime', title: 'Runtime' });
      remove();
      return { ok: true };
    }
    return { ok: false, error: 'unknown' };
  },
};
const beta: Rib = { id: 'beta', displayName: 'Beta', views: [{ key: 'rib:beta', canvasKind: 'markdown' }] };

describe('the ribs subgraph', () => {
  let db: TestDatabase;
  let home: string;
  const running: RunningRibs[] = [];

  const boot = async (ribs: Record<string, unknown>, env: Record<string, string> = {}, overrides: RibHostOverrides = {}) => {
    const ribsSubgraph = await startRibsSubgraph({
      databaseUrl: db.url,
      host: '127.0.0.1',
      port: 0,
      security,
      settings: { home, projectsUrl: 'http://127.0.0.1:9/graphql', env },
      log: silentLogger(),
      ribHost: { available: ribs, ...overrides },
      projectsStartTimeoutMs: 50,
    });
    running.push(ribsSubgraph);
    registerCredentials(ribsSubgraph.url, serviceCredentials);
    return ribsSubgraph;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    home = mkdtempSync(join(tmpdir(), 'keelson-home-'));
  });
  afterAll(async () => {
    for (const r of running) await r.stop();
    await db?.drop();
    rmSync(home, { recursive: true, force: true });
  });

  it('fails to start, naming the rib and the rule, when a rib breaks an activation rule', async () => {
    const outOfNamespace: Rib = { id: 'gamma', displayName: 'Gamma', views: [{ key: 'rib:alpha', canvasKind: 'view' }] };
    await expect(boot({ alpha, gamma: outOfNamespace })).rejects.toThrow(
      "the ribs subgraph cannot start: rib 'gamma': view key 'rib:alpha' is outside the rib's namespace (rib:gamma or rib:gamma:*)",
    );
    const twoMains: Rib = {
      id: 'delta',
      displayName: 'Delta',
      surfaces: [
        { id: 'main', title: 'One', layout: { rows: [] } },
        { id: 'main', title: 'Two', layout: { rows: [] } },
      ],
    };
    await expect(boot({ delta: twoMains })).rejects.toThrow("the ribs subgraph cannot start: rib 'delta': declares surface id 'main' twice");
  });

  describe('serving', () => {
    let ribs: RunningRibs;
    beforeAll(async () => {
      ribs = await boot({ alpha, beta, gamma: { id: 'gamma', displayName: 'Gamma' } }, { KEELSON_RIBS: 'alpha,beta' });
    });

    it('lists the active ribs with views, surfaces (regions flattened) and crossRibGrants reported as {} when there are none', async () => {
      const data = await gqlData<{ ribManifest: { crossRibGrants: unknown; ribs: { id: string; views: unknown[]; surfaces: { tabId: string; regions: { key: string; slot: string; cadenceMs: number | null }[] }[]; auth: unknown }[] } }>(
        ribs.url,
        '{ ribManifest { crossRibGrants ribs { id registered views { key canvasKind title } surfaces { tabId regions { key slot cadenceMs } } auth { authenticated } } } }',
      );
      expect(data.ribManifest.crossRibGrants).toEqual({});
      expect(data.ribManifest.ribs.map((r) => r.id)).toEqual(['alpha', 'beta']);
      const [a, b] = data.ribManifest.ribs;
      expect(a!.views).toEqual([{ key: 'rib:alpha', canvasKind: 'VIEW', title: 'Alpha' }]);
      expect(a!.surfaces[0]!.tabId).toBe('surface:alpha:main');
      expect(a!.surfaces[0]!.regions).toEqual([
        { key: 'rib:alpha', slot: 'ROW', cadenceMs: 30000 },
        { key: 'rib:alpha:a', slot: 'ROW', cadenceMs: null },
        { key: 'rib:alpha:b', slot: 'ROW', cadenceMs: null },
      ]);
      expect(a!.auth).toBeNull();
      expect(b!.views).toEqual([{ key: 'rib:beta', canvasKind: 'MARKDOWN', title: null }]);
    });

    it('answers rib(id) for an installed rib the filter left inactive with registered false, and null for an unknown one', async () => {
      const data = await gqlData<{ gamma: { registered: boolean; views: unknown[] }; zeta: null }>(ribs.url, '{ gamma: rib(id: "gamma") { registered views { key } } zeta: rib(id: "zeta") { id } }');
      expect(data).toEqual({ gamma: { registered: false, views: [] }, zeta: null });
      const bad = await gql(ribs.url, '{ rib(id: "Not_Valid") { id } }');
      expect(bad.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', status: 400 });
    });

    it('drops a descriptor a rib broke after boot from that request, and keeps serving everything else', async () => {
      views.push({ key: 'rib:beta:stolen', canvasKind: 'view' });
      try {
        const data = await gqlData<{ ribManifest: { ribs: { id: string; views: { key: string }[] }[] } }>(ribs.url, '{ ribManifest { ribs { id views { key } } } }');
        expect(data.ribManifest.ribs.map((r) => [r.id, r.views.map((v) => v.key)])).toEqual([
          ['alpha', ['rib:alpha']],
          ['beta', ['rib:beta']],
        ]);
      } finally {
        views.pop();
      }
    });

    it('resolves Rib references for other subgraphs', async () => {
      const data = await gqlData<{ _entities: unknown[] }>(ribs.url, 'query ($r: [_Any!]!) { _entities(representations: $r) { ... on Rib { id displayName hasOnAction } } }', {
        r: [{ __typename: 'Rib', id: 'beta' }, { __typename: 'Rib', id: 'alpha' }, { __typename: 'Rib', id: 'nobody' }],
      });
      expect(data._entities).toEqual([{ id: 'beta', displayName: 'Beta', hasOnAction: false }, { id: 'alpha', displayName: 'Alpha', hasOnAction: true }, null]);
    });

    it('recomposes on demand: NOT_FOUND without a composer, UPSTREAM_FAILED when the composer throws (the prior version stands)', async () => {
      const ok = await gqlData<{ recomposeSnapshot: { version: number; payload: unknown; cursor: string } }>(ribs.url, 'mutation { recomposeSnapshot(key: "rib:alpha:flaky") { version payload cursor } }');
      expect(ok.recomposeSnapshot).toMatchObject({ version: 1, payload: { fine: true } });
      composeFails = true;
      const failed = await gql(ribs.url, 'mutation { recomposeSnapshot(key: "rib:alpha:flaky") { version } }');
      expect(failed.errors?.[0]).toMatchObject({ message: expect.stringMatching(/the source is down/), extensions: { code: 'UPSTREAM_FAILED', status: 502, outcome: 'failed' } });
      composeFails = false;
      const current = await gqlData<{ snapshot: { version: number } }>(ribs.url, '{ snapshot(key: "rib:alpha:flaky") { version } }');
      expect(current.snapshot.version).toBe(1);
      const missing = await gql(ribs.url, 'mutation { recomposeSnapshot(key: "rib:beta:none") { version } }');
      expect(missing.errors?.[0]?.extensions).toMatchObject({ code: 'NOT_FOUND' });
      const bad = await gql(ribs.url, 'mutation { recomposeSnapshot(key: "projects") { version } }');
      expect(bad.errors?.[0]).toMatchObject({ message: expect.stringMatching(/key: a snapshot key is rib:<id>/), extensions: { code: 'BAD_USER_INPUT' } });
    });

    it('rejects a subscription to keys outside any rib namespace', async () => {
      const sub = subscribe(ribs.wsUrl, 'subscription ($k: [String!]!) { snapshotFrames(keys: $k) { cursor } }', { k: ['nope'] });
      expect((await sub.next()).errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
      await sub.close();
    });

    it('streams manifest invalidations from the manifest stream, resumable after a dropped socket', async () => {
      const query = 'subscription ($after: String) { manifestInvalidated(after: $after) { cursor ribId reason } }';
      type Nudge = { manifestInvalidated: { cursor: string; ribId: string; reason: string } };
      const first = subscribe<Nudge>(ribs.wsUrl, query, {});
      await new Promise((r) => setTimeout(r, 200));
      await gqlData(ribs.url, 'mutation { ribAction(ribId: "alpha", type: "touch") { ok } }');
      const [touched] = await first.take(1);
      expect(touched!.data!.manifestInvalidated).toMatchObject({ ribId: 'alpha', reason: 'RIB_INVALIDATED' });
      await first.drop();

      await gqlData(ribs.url, 'mutation { ribAction(ribId: "alpha", type: "region") { ok } }');
      const resumed = subscribe<Nudge>(ribs.wsUrl, query, { after: touched!.data!.manifestInvalidated.cursor });
      const missed = await resumed.take(2);
      expect(missed.map((m) => m.data!.manifestInvalidated.reason)).toEqual(['REGION_REGISTERED', 'REGION_UNREGISTERED']);
      await resumed.close();
    });
  });

  it('reports the operator grants in force as crossRibGrants', async () => {
    const granted = await boot({ alpha, beta }, { KEELSON_CROSS_RIB_GRANTS: 'alpha:beta:*' });
    const data = await gqlData<{ ribManifest: { crossRibGrants: unknown } }>(granted.url, '{ ribManifest { crossRibGrants } }');
    expect(data.ribManifest.crossRibGrants).toEqual({ alpha: { beta: ['*'] } });
  });
});
