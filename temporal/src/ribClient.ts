import type { Client, WorkflowHandle } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { TASK_QUEUE, workflowKinds, workflowTypes, type RefreshAttach } from '@keelson/schema';
import type { RibActivities } from './activities/ribs/ribActivities';
import { HEARTBEAT_THROTTLE_INTERVAL } from './heartbeatThrottle';
import { startOpExecution, type OpStartOptions } from './runClient';
import { searchAttributeKeys } from './searchAttributeKeys';
import { refreshAttachSignal, refreshDetachSignal, refreshLiveSignal } from './workflows/ribMessages';
import type { regionRefresh, RegionRefreshInput, ribOp, RibOpInput } from './workflows';

/** A ribs process's own task queue: `<task queue>.ribs.<instance>`. Only that process polls it. */
export function ribHolderTaskQueue(taskQueue: string, instance: string): string {
  return `${taskQueue}.ribs.${instance}`;
}

/**
 * `refresh-<key>`, one per snapshot key: what operators see in the Temporal UI. A mesh on a task queue
 * other than the default appends `@<task queue>`, so meshes sharing a namespace never share a heartbeat.
 */
export function refreshWorkflowId(key: string, taskQueue: string): string {
  return taskQueue === TASK_QUEUE ? `refresh-${key}` : `refresh-${key}@${taskQueue}`;
}

/** A rib op starts on the mesh's task queue (the workflow and its bookkeeping run there; the hold runs on `input.holderTaskQueue`). */
export interface StartRibOpOptions extends OpStartOptions<RibOpInput> {
  /** KeelsonRib: the registering rib. */
  rib: string;
}

/** Starts a rib op as `ribOp` (see {@link startOpExecution}). */
export function startRibOpWorkflow(client: Client, opts: StartRibOpOptions): Promise<WorkflowHandle<typeof ribOp>> {
  return startOpExecution<typeof ribOp>(client, workflowTypes.ribOp, opts);
}

export interface AttachRefreshOptions {
  taskQueue: string;
  workflowId: string;
  input: RegionRefreshInput;
}

/**
 * Starts the region's heartbeat, or re-attaches this holder to the running one (signal-with-start):
 * `KeelsonKind='refresh'`, `KeelsonRib`, `KeelsonWorkflowName` (the region's workflow, when it has one),
 * memo `{ title, key }`. Resolves with the run id of the execution it signalled.
 */
export async function attachRegionRefresh(client: Client, opts: AttachRefreshOptions): Promise<string> {
  const { input } = opts;
  const every = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`);
  const handle = await client.workflow.signalWithStart<typeof regionRefresh, [RefreshAttach]>(workflowTypes.regionRefresh, {
    taskQueue: opts.taskQueue,
    workflowId: opts.workflowId,
    args: [input],
    signal: refreshAttachSignal,
    signalArgs: [input.attach],
    typedSearchAttributes: [
      { key: searchAttributeKeys.kind, value: workflowKinds.refresh },
      { key: searchAttributeKeys.rib, value: input.ribId },
      ...(input.workflow ? [{ key: searchAttributeKeys.workflowName, value: input.workflow }] : []),
    ],
    memo: {
      title: `refresh ${input.key} ${input.workflow ? `by ${input.workflow}` : 'by its composer'} every ${every(input.attach.liveIntervalMs)} while watched, ${every(input.attach.idleIntervalMs)} idle`,
      key: input.key,
    },
  });
  return handle.signaledRunId;
}

/** Tells a region's heartbeat that its key's live state changed in this holder. */
export async function signalRegionLive(client: Client, workflowId: string, holderTaskQueue: string, live: boolean): Promise<void> {
  await client.workflow.getHandle(workflowId).signal(refreshLiveSignal, { holderTaskQueue, live });
}

/** Ends a region's heartbeat if this holder still holds it. */
export async function detachRegionRefresh(client: Client, workflowId: string, holderTaskQueue: string): Promise<void> {
  await client.workflow.getHandle(workflowId).signal(refreshDetachSignal, { holderTaskQueue });
}

export interface RibWorkerOptions {
  address: string;
  namespace?: string;
  /** The process's own queue, from {@link ribHolderTaskQueue}. */
  taskQueue: string;
  activities: RibActivities;
}

export interface RunningRibWorker {
  worker: Worker;
  /** Drains running activities (they see WORKER_SHUTDOWN), stops polling, closes the connection. Idempotent. */
  stop(): Promise<void>;
}

/** An activity-only worker on a ribs process's own task queue: it runs op holds and region refreshes. */
export async function startRibWorker(options: RibWorkerOptions): Promise<RunningRibWorker> {
  const connection = await NativeConnection.connect({ address: options.address });
  let worker: Worker;
  try {
    worker = await Worker.create({ connection, namespace: options.namespace ?? 'default', taskQueue: options.taskQueue, activities: options.activities, maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE_INTERVAL });
  } catch (err) {
    await connection.close();
    throw err;
  }
  const running = worker.run();
  running.catch(() => {});
  let stopping: Promise<void> | undefined;
  return {
    worker,
    stop: () =>
      (stopping ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        try {
          await running;
        } finally {
          await connection.close();
        }
      })()),
  };
}
