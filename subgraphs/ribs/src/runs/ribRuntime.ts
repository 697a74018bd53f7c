import type { EventLog, EventNotifier } from '@keelson/platform';
import { randomUUID } from 'node:crypto';
import { createRibRuns, type RibHost, type RibHostOptions, type RibRuns, type RunsPort } from '@keelson/host';
import { HOLDER_STOPPED } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { OpStore } from '@keelson/runs';
import { connectClient, createRibActivities, ribHolderTaskQueue, startRibWorker, type RunningRibWorker } from '@keelson/temporal';
import type { Client } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { LiveKeys } from './liveKeys';
import { PgOpsPort } from './pgOpsPort';
import { RefreshDriver } from './refreshDriver';
import { RunEventConsumer } from './runEventConsumer';

/** How long each Temporal call made while stopping may take. */
const STOP_DEADLINE_MS = 5000;

/** How the ribs subgraph reaches runs, ops and Temporal (given by whoever boots it next to the runs domain). */
export interface RibRunsWiring {
  /** The runs domain; undefined until it is up (`npm start` boots the ribs subgraph first). */
  runs: () => RunsPort | undefined;
  temporal: { address: string; namespace: string; taskQueue: string };
  /** Heartbeat timeout of op holds: a dead registering process is noticed within it (KEELSON_RUN_HEARTBEAT_TIMEOUT_MS). */
  heartbeatTimeoutMs: number;
  /** The region heartbeat; `false` turns it off. `timeScale` is test-only (production: 1, so the 30 s floor holds). */
  refresh?: false | { timeScale?: number };
  /** Longest a policy `ask` waits for the operator. @default 300000 */
  approvalMaxWaitMs?: number;
}

/** What the runtime needs once the host is up. */
export interface RibRuntimeStart {
  host: RibHost;
  dataSource: DataSource;
  events: EventLog;
  notifier: EventNotifier;
  projectName(projectId: string): string | undefined;
}

/**
 * The run seams' machinery in the ribs process: the host-side seams (`createRibRuns`), a Temporal
 * client, an activity-only worker on this process's own task queue (op holds, region refreshes), the
 * durable `runs` stream consumer behind `onRunEvent`, and the region heartbeat planner.
 */
export class RibRuntime {
  readonly ribRuns: RibRuns;
  readonly liveKeys = new LiveKeys();
  /** `<task queue>.ribs.<instance>`: a new one per process start. */
  readonly holderTaskQueue: string;
  private ops: PgOpsPort | undefined;
  private client: Client | undefined;
  private worker: RunningRibWorker | undefined;
  private consumer: RunEventConsumer | undefined;
  private refresh: RefreshDriver | undefined;
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly wiring: RibRunsWiring,
    private readonly ctx: { home: string; log: Logger },
  ) {
    this.holderTaskQueue = ribHolderTaskQueue(wiring.temporal.taskQueue, randomUUID().slice(0, 8));
    this.ribRuns = createRibRuns({
      runs: wiring.runs,
      ops: () => this.ops,
      home: ctx.home,
      logger: ctx.log,
      ...(wiring.approvalMaxWaitMs ? { approvalMaxWaitMs: wiring.approvalMaxWaitMs } : {}),
    });
  }

  /** Merges the run seams, the `run_*` tools and the approval port into the host options (the caller's own win). */
  hostOptions(given: Partial<RibHostOptions> = {}): Partial<RibHostOptions> {
    const mine = this.ribRuns.hostOptions;
    return {
      seams: (ribId) => ({ ...mine.seams(ribId), ...(given.seams?.(ribId) ?? {}) }),
      hostTools: [...mine.hostTools, ...(given.hostTools ?? [])],
      approvals: given.approvals ?? mine.approvals,
    };
  }

  async start(s: RibRuntimeStart): Promise<void> {
    const { temporal } = this.wiring;
    this.ribRuns.bind(s.host);
    this.client = await connectClient({ address: temporal.address, namespace: temporal.namespace });
    const store = new OpStore(s.dataSource, s.events);
    this.ops = new PgOpsPort({
      store,
      client: this.client,
      taskQueue: temporal.taskQueue,
      holderTaskQueue: this.holderTaskQueue,
      heartbeatTimeoutMs: this.wiring.heartbeatTimeoutMs,
      projectName: s.projectName,
    });
    this.refresh =
      this.wiring.refresh === false
        ? undefined
        : new RefreshDriver({
            client: this.client,
            taskQueue: temporal.taskQueue,
            holderTaskQueue: this.holderTaskQueue,
            host: s.host,
            liveKeys: this.liveKeys,
            log: this.ctx.log.child({ component: 'region-heartbeat' }),
            timeScale: this.wiring.refresh?.timeScale ?? 1,
          });
    const refresh = this.refresh;
    this.worker = await startRibWorker({
      address: temporal.address,
      namespace: temporal.namespace,
      taskQueue: this.holderTaskQueue,
      activities: createRibActivities({
        store,
        events: s.events,
        heldOp: (opId) => this.ribRuns.liveOps.held(opId),
        refreshRegion: async (input, signal) => {
          try {
            await this.ribRuns.refreshRegion(input, signal);
          } catch (err) {
            // The holder answered; a failed refresh keeps the prior version and the heartbeat going.
            this.ctx.log.warn({ err, key: input.key }, 'a region refresh failed; the prior version stands');
          }
          return { live: this.liveKeys.isLive(input.key), gone: !refresh?.has(input.key) };
        },
        log: this.ctx.log,
      }),
    });
    this.consumer = new RunEventConsumer({
      dataSource: s.dataSource,
      events: s.events,
      notifier: s.notifier,
      router: this.ribRuns.router,
      log: this.ctx.log.child({ component: 'run-events' }),
      name: `rib-run-events:${s.host.ribIds.join(',')}`,
    });
    await this.consumer.start();
    await this.refresh?.start();
  }

  /** The region heartbeat planner (tests read its plans). */
  get heartbeat(): RefreshDriver | undefined {
    return this.refresh;
  }

  /**
   * Detaches the region heartbeats, stops the consumer, then settles every op still held here as
   * FAILED "registering process stopped" (its rib's signal aborts; a hold already running reports it,
   * one that never started is settled and its workflow terminated here), and drains the worker.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      // Temporal calls made while stopping give up after a while: an unreachable server must not hold the shutdown.
      const bounded = <T>(fn: () => Promise<T>) => (this.client ? this.client.withDeadline(Date.now() + STOP_DEADLINE_MS, fn) : fn());
      await bounded(() => this.refresh?.stop() ?? Promise.resolve()).catch((err: unknown) => this.ctx.log.warn({ err }, 'detaching region heartbeats failed'));
      await this.consumer?.stop();
      await this.ribRuns.liveOps.registered();
      const orphans = this.ribRuns.liveOps.untaken();
      this.ribRuns.liveOps.stopAll(HOLDER_STOPPED);
      // Holds already running report the stop themselves; an op whose hold never reached this process is settled here.
      await Promise.all(
        orphans.map((id) =>
          bounded(() => this.ops?.abandon(id, HOLDER_STOPPED) ?? Promise.resolve()).catch((err: unknown) => this.ctx.log.warn({ err, opId: id }, 'could not settle an op')),
        ),
      );
      await this.worker?.stop().catch((err: unknown) => this.ctx.log.warn({ err }, 'stopping the ribs worker failed'));
      await this.client?.connection.close().catch(() => undefined);
    })();
    return this.stopping;
  }
}
