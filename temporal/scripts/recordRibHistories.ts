// Records the event histories of the rib workflows (`ribOp`, `regionRefresh`) into
// temporal/histories/<name>.json, for replay.int.test.ts. No Postgres: the bookkeeping activities are
// recorded fakes and a second worker plays the ribs process. Re-record only on purpose.
//   node -r ./scripts/register.js temporal/scripts/recordRibHistories.ts [--address host:port] [--only name,name]
import { workflowTypes } from '@keelson/schema';
import { steerSignal } from '../src/workflows/messages';
import { refreshDetachSignal, refreshLiveSignal } from '../src/workflows/ribMessages';
import { RibHarness } from '../test/ribHarness';
import { recordHarnessScenarios } from './recording';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Scenario = (h: RibHarness) => Promise<{ workflowId: string; runId?: string }>;

const scenarios: Record<string, Scenario> = {
  // Two steers recorded in order, then the rib's result.
  [workflowTypes.ribOp]: async (h) => {
    const handle = await h.startOp('recorded-ok');
    await handle.signal(steerSignal, 'first');
    await handle.signal(steerSignal, 'second');
    while (h.calls.filter((c) => c.startsWith('recordSteer recorded-ok')).length < 2) await sleep(50);
    h.ops.get('recorded-ok')!.settle({ status: 'succeeded', result: { done: true } });
    await handle.result();
    return { workflowId: handle.workflowId };
  },
  // A cancel reaching the rib's signal.
  [`${workflowTypes.ribOp}-cancelled`]: async (h) => {
    const handle = await h.startOp('recorded-cancel');
    while (!h.calls.includes('beginOp recorded-cancel')) await sleep(50);
    await sleep(300);
    await handle.cancel();
    await handle.result().catch(() => undefined);
    return { workflowId: handle.workflowId };
  },
  // The registering process died: no heartbeat, FAILED "registering process stopped".
  [`${workflowTypes.ribOp}-holderLost`]: async (h) => {
    const handle = await h.startOp('lost-recorded', 1000);
    await handle.result().catch(() => undefined);
    return { workflowId: handle.workflowId };
  },
  // Idle, live, idle again, then detached by its holder.
  [workflowTypes.regionRefresh]: async (h) => {
    const key = 'rib:recorded:ticks';
    const handle = await h.startRefresh(key, { liveIntervalMs: 200, idleIntervalMs: 1200, live: false });
    await sleep(1500);
    h.live.set(key, true);
    await handle.signal(refreshLiveSignal, { holderTaskQueue: h.holderTaskQueue, live: true });
    await sleep(1500);
    h.live.set(key, false);
    await handle.signal(refreshLiveSignal, { holderTaskQueue: h.holderTaskQueue, live: false });
    await sleep(500);
    await handle.signal(refreshDetachSignal, { holderTaskQueue: h.holderTaskQueue });
    await handle.result();
    return { workflowId: handle.workflowId };
  },
  // The first execution of a heartbeat that hands over (continue-as-new)…
  [`${workflowTypes.regionRefresh}-continuedAsNew`]: async (h) => {
    const key = 'rib:recorded:long';
    const handle = await h.startRefresh(key, { liveIntervalMs: 100, idleIntervalMs: 600, live: true }, 30);
    while ((await handle.describe()).runId === handle.firstRunId) await sleep(200);
    return { workflowId: handle.workflowId, runId: handle.firstRunId };
  },
  // …and the execution it handed over to, ending when its holder no longer declares the region.
  [`${workflowTypes.regionRefresh}-continued`]: async (h) => {
    const key = 'rib:recorded:long';
    const handle = h.client.workflow.getHandle(`refresh-${key}@${h.taskQueue}`);
    h.gone.add(key);
    await handle.result();
    return { workflowId: handle.workflowId, runId: (await handle.describe()).runId };
  },
};

recordHarnessScenarios((address) => RibHarness.start(address), scenarios);
