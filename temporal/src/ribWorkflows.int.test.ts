import { WorkflowFailedError } from '@temporalio/client';
import { HOLDER_STOPPED } from '@keelson/schema';
import { quietTemporalRuntime } from '../../test/support/temporalServer';
import { RibHarness } from '../test/ribHarness';
import { steerSignal } from './workflows/messages';
import { refreshDetachSignal, refreshLiveSignal, refreshStatusQuery } from './workflows/ribMessages';

quietTemporalRuntime();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('ribOp and regionRefresh on a real worker and dev server', () => {
  let h: RibHarness;

  beforeAll(async () => {
    h = await RibHarness.start();
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('ribOp records steers in order while the rib works, and succeeds with the rib\'s result', async () => {
    const handle = await h.startOp('ok-1');
    await handle.signal(steerSignal, 'first');
    await handle.signal(steerSignal, 'second');
    while (h.calls.filter((c) => c.startsWith('recordSteer ok-1')).length < 2) await sleep(50);
    h.ops.get('ok-1')!.settle({ status: 'succeeded', result: { n: 1 } });
    await expect(handle.result()).resolves.toEqual({ opId: 'ok-1', status: 'SUCCEEDED' });
    expect(h.calls.filter((c) => c.includes('ok-1'))).toEqual(['beginOp ok-1', 'recordSteer ok-1 0 first', 'recordSteer ok-1 1 second', 'completeOp ok-1']);
  });

  it('ribOp turns a cancel into an aborted signal and CANCELLED', async () => {
    const handle = await h.startOp('cancel-1');
    while (!h.calls.includes('beginOp cancel-1')) await sleep(50);
    await sleep(200);
    await handle.cancel();
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(h.ops.get('cancel-1')!.cancelledWith).toBe('cancelled by request');
    expect(h.calls).toContain('settleOp cancel-1 CANCELLED cancelled by request');
  });

  it('ribOp settles FAILED "registering process stopped" when its process stops heartbeating', async () => {
    const started = Date.now();
    const handle = await h.startOp('lost-1', 1000);
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(h.calls).toContain(`settleOp lost-1 FAILED ${HOLDER_STOPPED}: no heartbeat from ${h.holderTaskQueue} within 1000 ms`);
    console.log(`a lost holder was settled FAILED ${Date.now() - started} ms after the start (heartbeat timeout 1000 ms)`);
  });

  it('regionRefresh ticks at the idle interval, at the live one once a subscriber arrives, and ends when detached', async () => {
    const key = 'rib:test:ticks';
    const handle = await h.startRefresh(key, { liveIntervalMs: 250, idleIntervalMs: 1500, live: false });
    await sleep(1000);
    expect(h.refreshes.get(key) ?? []).toHaveLength(0);
    h.live.set(key, true);
    await handle.signal(refreshLiveSignal, { holderTaskQueue: h.holderTaskQueue, live: true });
    // Three ticks at the idle interval would take 4.5 s; at the live one they come well inside that,
    // however loaded the machine (polled, not slept: timing is measured, not assumed).
    const liveFrom = Date.now();
    while ((h.refreshes.get(key) ?? []).length < 3 && Date.now() - liveFrom < 10_000) await sleep(50);
    expect((h.refreshes.get(key) ?? []).length).toBeGreaterThanOrEqual(3);
    expect(Date.now() - liveFrom).toBeLessThan(4_000);
    expect(await handle.query(refreshStatusQuery)).toMatchObject({ key, live: true, intervalMs: 250, holderTaskQueue: h.holderTaskQueue });
    // A signal from another holder is not this heartbeat's business.
    await handle.signal(refreshLiveSignal, { holderTaskQueue: 'someone-else', live: false });
    h.live.set(key, false);
    await handle.signal(refreshLiveSignal, { holderTaskQueue: h.holderTaskQueue, live: false });
    const idleFrom = (h.refreshes.get(key) ?? []).length;
    await sleep(1000);
    expect((h.refreshes.get(key) ?? []).length - idleFrom).toBeLessThanOrEqual(1);
    // Idle, it goes on at the idle interval — not faster, and not much slower (the dev server fires
    // timers on a clock of about a second; four times slower would be 6 s apart).
    const idleSince = Date.now();
    while ((h.refreshes.get(key) ?? []).length < idleFrom + 3 && Date.now() - idleSince < 20_000) await sleep(50);
    const idleTicks = (h.refreshes.get(key) ?? []).slice(idleFrom + 1, idleFrom + 3);
    expect(idleTicks).toHaveLength(2);
    const apart = idleTicks[1]! - idleTicks[0]!;
    console.log(`regionRefresh: idle ticks ${apart} ms apart (idle interval 1500 ms)`);
    expect(apart).toBeGreaterThanOrEqual(1400);
    expect(apart).toBeLessThan(4500);
    await handle.signal(refreshDetachSignal, { holderTaskQueue: h.holderTaskQueue });
    await expect(handle.result()).resolves.toMatchObject({ key, ended: 'detached' });
  });

  it('regionRefresh ends when its holder no longer declares the region, and hands over before its history grows long', async () => {
    const key = 'rib:test:gone';
    const handle = await h.startRefresh(key, { liveIntervalMs: 100, idleIntervalMs: 600, live: true }, 30);
    // The dev server fires timers about once a second: a few ticks take a few seconds.
    while ((await handle.describe()).runId === handle.firstRunId) await sleep(200);
    h.gone.add(key);
    await expect(handle.result()).resolves.toMatchObject({ key, ended: 'gone' });
    expect((h.refreshes.get(key) ?? []).length).toBeGreaterThan(2);
  });
});
