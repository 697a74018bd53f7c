import type { RibHost } from '@keelson/host';
import type { Logger } from '@keelson/service';
import { effectiveCadenceMs } from '@keelson/ribs-contract';
import { attachRegionRefresh, detachRegionRefresh, refreshWorkflowId, signalRegionLive } from '@keelson/temporal';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { LiveKeys } from './liveKeys';

/** What the heartbeat of one key runs on. */
export interface RegionPlan {
  key: string;
  ribId: string;
  workflow?: string;
  liveIntervalMs: number;
  idleIntervalMs: number;
}

export interface RefreshDriverOptions {
  client: Client;
  /** The mesh's task queue (the `regionRefresh` workflows run there). */
  taskQueue: string;
  /** This process's own queue (their `refreshRegion` activities run here). */
  holderTaskQueue: string;
  host: Pick<RibHost, 'surfaceRegions' | 'onManifestInvalidated'>;
  liveKeys: LiveKeys;
  log: Logger;
  /** Test-only: every interval is multiplied by it (production: 1, so the 30 s floor holds). @default 1 */
  timeScale?: number;
}

/**
 * The server heartbeat's planner: which keys get a `regionRefresh` workflow (regions with a
 * `cadenceMs`, not `serverRefresh: false`, without `workflowArgs` — the heartbeat cannot supply args,
 * so those refresh only while their surface is open), attached at boot and whenever `registerRegion`
 * adds or removes one, told of live-subscriber transitions, detached at shutdown. It plans and
 * signals; the timing is Temporal's.
 */
export class RefreshDriver {
  private readonly attached = new Map<string, RegionPlan>();
  private chain: Promise<void> = Promise.resolve();
  private readonly unsubscribe: (() => void)[] = [];
  private stopped = false;

  constructor(private readonly opts: RefreshDriverOptions) {}

  /** Attaches every planned region, then follows runtime region changes and live transitions. */
  async start(): Promise<void> {
    this.unsubscribe.push(this.opts.host.onManifestInvalidated(() => void this.sync()));
    this.unsubscribe.push(this.opts.liveKeys.onChange((key, live) => void this.live(key, live)));
    await this.sync();
  }

  /** True while this process plans a heartbeat for the key. */
  has(key: string): boolean {
    return this.attached.has(key);
  }

  plans(): RegionPlan[] {
    const scale = this.opts.timeScale ?? 1;
    const byKey = new Map<string, RegionPlan>();
    for (const { ribId, region } of this.opts.host.surfaceRegions()) {
      if (region.serverRefresh === false || region.workflowArgs || region.cadenceMs === undefined) continue;
      const live = Math.max(1, Math.round(effectiveCadenceMs(region)! * scale));
      const idle = Math.max(1, Math.round(effectiveCadenceMs(region, true)! * scale));
      const known = byKey.get(region.key);
      if (known && known.liveIntervalMs <= live) continue;
      byKey.set(region.key, { key: region.key, ribId, ...(region.workflow ? { workflow: region.workflow } : {}), liveIntervalMs: live, idleIntervalMs: idle });
    }
    return [...byKey.values()];
  }

  /** The workflow id of a key's heartbeat. */
  workflowId(key: string): string {
    return refreshWorkflowId(key, this.opts.taskQueue);
  }

  /** Brings the attached heartbeats in line with the regions declared now (serialized). */
  sync(): Promise<void> {
    const next = this.chain.then(async () => {
      if (this.stopped) return;
      const wanted = new Map(this.plans().map((p) => [p.key, p]));
      for (const [key, plan] of wanted) {
        const had = this.attached.get(key);
        if (had && JSON.stringify(had) === JSON.stringify(plan)) continue;
        await this.attach(plan);
      }
      for (const key of [...this.attached.keys()]) {
        if (wanted.has(key)) continue;
        this.attached.delete(key);
        await detachRegionRefresh(this.opts.client, this.workflowId(key), this.opts.holderTaskQueue).catch((err: unknown) =>
          this.opts.log.warn({ err, key }, 'could not detach a region heartbeat'),
        );
      }
    });
    this.chain = next.catch((err: unknown) => this.opts.log.warn({ err }, 'planning region heartbeats failed'));
    return this.chain;
  }

  /** Detaches every heartbeat this process holds (they end; the next boot re-attaches). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const off of this.unsubscribe.splice(0)) off();
    await this.chain;
    await Promise.all(
      [...this.attached.keys()].map((key) => detachRegionRefresh(this.opts.client, this.workflowId(key), this.opts.holderTaskQueue).catch(() => undefined)),
    );
    this.attached.clear();
  }

  private async attach(plan: RegionPlan): Promise<void> {
    try {
      await attachRegionRefresh(this.opts.client, {
        taskQueue: this.opts.taskQueue,
        workflowId: this.workflowId(plan.key),
        input: {
          key: plan.key,
          ribId: plan.ribId,
          ...(plan.workflow ? { workflow: plan.workflow } : {}),
          attach: { holderTaskQueue: this.opts.holderTaskQueue, liveIntervalMs: plan.liveIntervalMs, idleIntervalMs: plan.idleIntervalMs, live: this.opts.liveKeys.isLive(plan.key) },
        },
      });
      this.attached.set(plan.key, plan);
    } catch (err) {
      this.opts.log.warn({ err, key: plan.key }, 'could not attach a region heartbeat');
    }
  }

  private async live(key: string, live: boolean): Promise<void> {
    const plan = this.attached.get(key);
    if (this.stopped || !plan) return;
    try {
      await signalRegionLive(this.opts.client, this.workflowId(key), this.opts.holderTaskQueue, live);
    } catch (err) {
      // A heartbeat that ended (no holder answered for a while) starts again, with the live state.
      if (err instanceof WorkflowNotFoundError) await this.attach(plan);
      else this.opts.log.warn({ err, key }, 'could not signal a region heartbeat');
    }
  }
}
