import type { DomainState } from '@keelson/platform';
import { streams, type CapabilityChangePayload } from '@keelson/schema';
import { silentLogger } from '@keelson/service';
import { openTestDomainState } from '../../test/support/domainState';
import { CapabilityWatcher, type CapabilityObservation } from './capabilities';

describe('CapabilityWatcher on real Postgres', () => {
  let state: DomainState;

  beforeAll(async () => {
    state = await openTestDomainState([], 'operator_test_migrations');
  });
  afterAll(() => state?.close());

  const said = async (prefix: string) =>
    ((await state.dataSource.query('SELECT key, payload FROM events WHERE stream = $1 AND key LIKE $2 ORDER BY seq', [streams.capabilities, `${prefix}%`])) as {
      key: string;
      payload: CapabilityChangePayload;
    }[]).map((r) => [r.key, r.payload.available, r.payload.previous]);

  const watcher = (now: () => CapabilityObservation[], complete = false) =>
    new CapabilityWatcher({
      dataSource: state.dataSource,
      events: state.events,
      source: complete ? 'RIB' : 'HARNESS',
      intervalMs: 60_000,
      log: silentLogger(),
      observe: async () => now(),
      ...(complete ? { complete: { reason: 'gone' } } : {}),
    });

  it('says the first observation, then only changes, once across watchers and restarts', async () => {
    let installed = false;
    const now = () => [{ id: 'x', available: installed, state: { installed, version: null }, reason: installed ? null : `not installed at ${Date.now()}` }];
    const a = watcher(now);
    const b = watcher(now);
    expect(await a.poll()).toBe(1);
    expect(await a.poll()).toBe(0); // the reason changed, the facts did not
    installed = true;
    const [ra, rb] = await Promise.all([a.poll(), b.poll()]);
    expect(ra + rb).toBe(1);
    // A restarted watcher compares with what was last said.
    expect(await watcher(now).poll()).toBe(0);
    expect(await said('HARNESS:x')).toEqual([
      ['HARNESS:x', false, null],
      ['HARNESS:x', true, false],
    ]);
  });

  it('with a complete list, reports what is no longer listed as unavailable', async () => {
    let active = ['notes', 'swarm'];
    const now = () => active.map((id) => ({ id, available: true, state: { active: true }, reason: null }));
    const w = watcher(now, true);
    expect(await w.poll()).toBe(2);
    active = ['notes'];
    expect(await w.poll()).toBe(1);
    expect(await w.poll()).toBe(0);
    expect(await said('RIB:')).toEqual([
      ['RIB:notes', true, null],
      ['RIB:swarm', true, null],
      ['RIB:swarm', false, true],
    ]);
  });
});
