import { NativeConnection, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { TASK_QUEUE } from '@keelson/schema';
import type { Activities } from './activities';
import { HEARTBEAT_THROTTLE_INTERVAL } from './heartbeatThrottle';
import { workerTracing } from './tracing';
import { workflowBundle } from './workflowBundle';

export interface StartWorkerOptions {
  /** `host:port` of the Temporal frontend. */
  address: string;
  /** @default default */
  namespace?: string;
  /** @default TASK_QUEUE from @keelson/schema */
  taskQueue?: string;
  /** The implementations to register, from `createActivities(deps)`. */
  activities: Activities;
  /** A prebuilt bundle of the workflows. @default the process-wide {@link workflowBundle} */
  workflowBundle?: WorkflowBundleWithSourceMap;
  /**
   * A file of the workflows bundled ahead without the tracing interceptors (KEELSON_WORKFLOW_BUNDLE),
   * loaded in place of {@link workflowBundle} while tracing is off.
   */
  workflowBundleFile?: string;
}

export interface RunningWorker {
  worker: Worker;
  /** Drains in-flight tasks, stops polling and closes the connection. Idempotent. */
  stop(): Promise<void>;
}

/** Connects, creates and runs a worker polling `taskQueue` for mesh workflows and activities. */
export async function startWorker(options: StartWorkerOptions): Promise<RunningWorker> {
  const { address, namespace = 'default', taskQueue = TASK_QUEUE, activities } = options;
  // Tracing on: the traced bundle, activity spans and the workflows' span sink (see tracing.ts).
  const tracing = workerTracing();
  const traced = tracing.sinks !== undefined;
  const bundle = options.workflowBundle ?? (options.workflowBundleFile && !traced ? { codePath: options.workflowBundleFile } : await workflowBundle({ traced }));
  const connection = await NativeConnection.connect({ address });
  let worker: Worker;
  try {
    worker = await Worker.create({ connection, namespace, taskQueue, activities, workflowBundle: bundle, maxHeartbeatThrottleInterval: HEARTBEAT_THROTTLE_INTERVAL, ...tracing });
  } catch (error) {
    await connection.close();
    throw error;
  }
  const running = worker.run();
  // A run that fails early surfaces from stop(); keep it from being an unhandled rejection meanwhile.
  running.catch(() => {});

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      try {
        await running;
      } finally {
        await connection.close();
      }
    })();
    return stopping;
  };
  return { worker, stop };
}
