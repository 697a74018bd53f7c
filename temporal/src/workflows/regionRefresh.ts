// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { RefreshAttach, RegionRefreshStatus } from '@keelson/schema';
import type { RibActivities } from '../activities/ribs/ribActivities';
import { refreshAttachSignal, refreshDetachSignal, refreshLiveSignal, refreshStatusQuery } from './ribMessages';

export interface RegionRefreshInput {
  /** The region's snapshot key (`rib:<id>` / `rib:<id>:*`). */
  key: string;
  ribId: string;
  /** The catalog workflow a refresh re-runs; absent, the key's composer recomposes. */
  workflow?: string;
  /** The holder and intervals at start (later ones arrive as `attach` signals). */
  attach: RefreshAttach;
  /** Hand over at this history length (Temporal's own suggestion applies too). @default 2000 */
  maxHistoryEvents?: number;
  /** Set by continue-as-new only. */
  carried?: { refreshes: number; lastRefreshAt: number };
}

export interface RegionRefreshResult {
  key: string;
  refreshes: number;
  /** detached: the holder stopped or unregistered the region; gone: the holder no longer declares it; unanswered: no holder answered three ticks in a row. */
  ended: 'detached' | 'gone' | 'unanswered';
}

/** Consecutive ticks no holder answered before the heartbeat gives up (the next boot restarts it). */
const MAX_FAILURES = 3;

/** Workflow time: recorded in history, so replay reads the same value. */
const now = () => new Date().getTime();

/**
 * The server heartbeat of one region: refreshes it every `liveIntervalMs` while its key has a live
 * `snapshotFrames` subscriber in the holder process and every `idleIntervalMs` (six times that)
 * otherwise. The holder signals `live` transitions, which reschedule the next refresh at once; each
 * refresh also reports the live state, correcting a missed signal. One workflow per key, a timer per
 * tick, the refresh itself an activity on the holder's own task queue: no home-made timer loop.
 */
export async function regionRefresh(input: RegionRefreshInput): Promise<RegionRefreshResult> {
  const { key, ribId, workflow } = input;
  let holder = input.attach.holderTaskQueue;
  let liveMs = input.attach.liveIntervalMs;
  let idleMs = input.attach.idleIntervalMs;
  let live = input.attach.live;
  let refreshes = input.carried?.refreshes ?? 0;
  let last = input.carried?.lastRefreshAt ?? now();
  let failures = 0;
  let detached = false;
  /** Bumped by every signal that can move the next refresh. */
  let version = 0;
  const interval = () => (live ? liveMs : idleMs);

  setHandler(refreshAttachSignal, (a) => {
    holder = a.holderTaskQueue;
    liveMs = a.liveIntervalMs;
    idleMs = a.idleIntervalMs;
    live = a.live;
    failures = 0;
    detached = false;
    version += 1;
  });
  setHandler(refreshLiveSignal, (l) => {
    if (l.holderTaskQueue !== holder || l.live === live) return;
    live = l.live;
    version += 1;
  });
  setHandler(refreshDetachSignal, (d) => {
    if (d.holderTaskQueue === holder) detached = true;
  });
  setHandler(refreshStatusQuery, (): RegionRefreshStatus => ({ key, holderTaskQueue: holder, live, intervalMs: interval(), refreshes, failures, lastRefreshAt: last }));

  for (;;) {
    const seen = version;
    const wait = last + interval() - now();
    if (wait > 0 && !detached) {
      await condition(() => detached || version !== seen, wait);
      if (!detached && version !== seen) continue;
    }
    if (detached) return { key, refreshes, ended: 'detached' };

    const tick = proxyActivities<RibActivities>({
      taskQueue: holder,
      scheduleToStartTimeout: '30 seconds',
      startToCloseTimeout: '30 minutes',
      heartbeatTimeout: '30 seconds',
      retry: { maximumAttempts: 1 },
    });
    const askedOf = holder;
    try {
      const outcome = await tick.refreshRegion({ key, ribId, ...(workflow ? { workflow } : {}) });
      refreshes += 1;
      failures = 0;
      if (outcome.gone) return { key, refreshes, ended: 'gone' };
      if (holder === askedOf) live = outcome.live;
    } catch {
      failures += 1;
      if (failures >= MAX_FAILURES) return { key, refreshes, ended: 'unanswered' };
    }
    last = now();

    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historyLength >= (input.maxHistoryEvents ?? 2000)) {
      if (detached) return { key, refreshes, ended: 'detached' };
      return await continueAsNew<typeof regionRefresh>({
        key,
        ribId,
        ...(workflow ? { workflow } : {}),
        attach: { holderTaskQueue: holder, liveIntervalMs: liveMs, idleIntervalMs: idleMs, live },
        ...(input.maxHistoryEvents ? { maxHistoryEvents: input.maxHistoryEvents } : {}),
        carried: { refreshes, lastRefreshAt: last },
      });
    }
  }
}
