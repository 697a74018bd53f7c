import type { EventLog } from '@keelson/platform';
import { randomUUID } from 'node:crypto';
import { Context } from '@temporalio/activity';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import type { RefreshAttach } from '@keelson/schema';
import { testTemporalAddress, testWorkflowBundleFile } from '../../test/support/temporalServer';
import type { Activities } from '../src/activities';
import { createRibActivities, type HeldOp, type HeldOpOutcome } from '../src/activities/ribs/ribActivities';
import { connectClient } from '../src/client';
import { attachRegionRefresh, ribHolderTaskQueue, startRibOpWorkflow, startRibWorker, type RunningRibWorker } from '../src/ribClient';
import { startWorker, type RunningWorker } from '../src/worker';
import type { regionRefresh, ribOp } from '../src/workflows';

/** A held op the test settles by hand. */
export interface TestHeldOp extends HeldOp {
  settle(outcome: HeldOpOutcome): void;
  readonly cancelledWith: string | undefined;
}

function heldOp(): TestHeldOp {
  let settle!: (o: HeldOpOutcome) => void;
  const outcome = new Promise<HeldOpOutcome>((r) => (settle = r));
  let cancelledWith: string | undefined;
  return {
    steerable: false,
    outcome,
    settle: (o) => settle(o),
    cancel(reason) {
      cancelledWith = reason;
    },
    steer: async () => undefined,
    get cancelledWith() {
      return cancelledWith;
    },
  };
}

/**
 * `ribOp` and `regionRefresh` on a real worker and dev server, without Postgres: the bookkeeping
 * activities are recorded, and a "ribs process" worker serves the holder activities on its own queue.
 * An op id starting with `lost` plays a process that died: its hold never heartbeats.
 */
export class RibHarness {
  /** `beginOp <id>`, `recordSteer <id> <index> <note>`, `settleOp <id> <status> <error>`, `completeOp <id>`. */
  readonly calls: string[] = [];
  readonly ops = new Map<string, TestHeldOp>();
  /** Epoch ms of each refresh, per key. */
  readonly refreshes = new Map<string, number[]>();
  readonly live = new Map<string, boolean>();
  readonly gone = new Set<string>();

  private constructor(
    readonly client: Client,
    readonly taskQueue: string,
    readonly holderTaskQueue: string,
    private readonly workers: { main: RunningWorker; holder: RunningRibWorker },
  ) {}

  static async start(address = testTemporalAddress()): Promise<RibHarness> {
    const taskQueue = `rib-test-${randomUUID()}`;
    const holderTaskQueue = ribHolderTaskQueue(taskQueue, 'test');
    // The activities record into the harness, which exists only once the workers do.
    const ref: { self?: RibHarness } = {};
    const calls = (line: string) => void ref.self!.calls.push(line);
    const book = {
      beginOp: async ({ opId }: { opId: string }) => calls(`beginOp ${opId}`),
      recordSteer: async ({ opId, index, note }: { opId: string; index: number; note: string }) => calls(`recordSteer ${opId} ${index} ${note}`),
      settleOp: async ({ opId, status, error }: { opId: string; status: string; error?: string }) => {
        calls(`settleOp ${opId} ${status} ${error ?? ''}`);
        return true;
      },
    };
    const real = createRibActivities({
      store: { completeOp: async (opId: string) => (calls(`completeOp ${opId}`), true) },
      events: {} as EventLog,
      heldOp: (opId) => ref.self!.ops.get(opId),
      refreshRegion: async ({ key }) => {
        const h = ref.self!;
        h.refreshes.set(key, [...(h.refreshes.get(key) ?? []), Date.now()]);
        return { live: h.live.get(key) ?? false, gone: h.gone.has(key) };
      },
    });
    const holderActivities = {
      ...real,
      async holdRibOp(input: { opId: string }) {
        if (!input.opId.startsWith('lost')) return real.holdRibOp(input);
        // A process that died: no heartbeat, no answer (until this worker shuts down).
        const signal = Context.current().cancellationSignal;
        await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        throw new CancelledFailure('gone');
      },
    };
    const main = await startWorker({ address, taskQueue, activities: book as unknown as Activities, workflowBundleFile: testWorkflowBundleFile() });
    const holder = await startRibWorker({ address, taskQueue: holderTaskQueue, activities: holderActivities });
    const client = await connectClient({ address });
    ref.self = new RibHarness(client, taskQueue, holderTaskQueue, { main, holder });
    return ref.self;
  }

  /** Starts a `ribOp` held by the harness's holder queue; the test settles it through `ops.get(opId)`. */
  async startOp(opId: string, heartbeatTimeoutMs = 2000): Promise<WorkflowHandle<typeof ribOp>> {
    this.ops.set(opId, heldOp());
    return startRibOpWorkflow(this.client, {
      taskQueue: this.taskQueue,
      workflowId: `op-test-${opId}`,
      title: `test op ${opId}`,
      rib: 'test',
      input: { opId, kind: 'test.op', holderTaskQueue: this.holderTaskQueue, heartbeatTimeoutMs },
    });
  }

  /** Starts (or re-attaches) the heartbeat of `key`. */
  async startRefresh(key: string, attach: Omit<RefreshAttach, 'holderTaskQueue'>, maxHistoryEvents?: number): Promise<WorkflowHandle<typeof regionRefresh> & { firstRunId: string }> {
    const workflowId = `refresh-${key}@${this.taskQueue}`;
    const firstRunId = await attachRegionRefresh(this.client, {
      taskQueue: this.taskQueue,
      workflowId,
      input: { key, ribId: 'test', attach: { ...attach, holderTaskQueue: this.holderTaskQueue }, ...(maxHistoryEvents ? { maxHistoryEvents } : {}) },
    });
    return Object.assign(this.client.workflow.getHandle<typeof regionRefresh>(workflowId), { firstRunId });
  }

  async stop(): Promise<void> {
    await this.client.connection.close();
    await this.workers.holder.stop();
    await this.workers.main.stop();
  }
}
