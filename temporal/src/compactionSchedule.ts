import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import { workflowKinds, workflowTypes } from '@keelson/schema';
import { searchAttributeKeys } from './searchAttributeKeys';
import type { MemoryCompactionInput } from './workflows/memoryCompaction';

/** The Schedule of a mesh's compaction passes (one per task queue, so meshes sharing a namespace keep apart). */
export function compactionScheduleId(taskQueue: string): string {
  return `memory-compaction-${taskQueue}`;
}

export interface CompactionScheduleOptions {
  taskQueue: string;
  /** Time between passes. */
  intervalMs: number;
  /** The pass's input (window size, ranges per pass, model choice). */
  input: MemoryCompactionInput;
}

function scheduleOptions(opts: CompactionScheduleOptions): ScheduleOptions {
  const attributes = [
    { key: searchAttributeKeys.kind, value: workflowKinds.compaction },
    { key: searchAttributeKeys.workflowName, value: workflowTypes.memoryCompaction },
  ];
  return {
    scheduleId: compactionScheduleId(opts.taskQueue),
    spec: { intervals: [{ every: opts.intervalMs }] },
    action: {
      type: 'startWorkflow',
      workflowType: workflowTypes.memoryCompaction,
      workflowId: compactionScheduleId(opts.taskQueue),
      taskQueue: opts.taskQueue,
      args: [opts.input],
      typedSearchAttributes: attributes,
      memo: { title: `Memory compaction: summaries of ${opts.input.window ?? 50}-message windows` },
    },
    // A pass still running when the next is due: skip the next (passes are idempotent anyway).
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
    typedSearchAttributes: attributes,
    memo: { title: 'Memory compaction (Keelson Mesh)' },
  };
}

/**
 * Makes the compaction Schedule exist with these options: created on first boot, updated on every
 * later one (interval, window, task queue), removed when `intervalMs` is 0. Safe to call from every
 * process that boots a worker: concurrent creators converge on one Schedule.
 * @returns the Schedule id, or null when compaction is off
 */
export async function ensureCompactionSchedule(client: Client, opts: CompactionScheduleOptions): Promise<string | null> {
  const id = compactionScheduleId(opts.taskQueue);
  if (opts.intervalMs <= 0) {
    await deleteCompactionSchedule(client, opts.taskQueue);
    return null;
  }
  const wanted = scheduleOptions(opts);
  try {
    await client.schedule.create(wanted);
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(id).update((previous) => ({ ...previous, spec: wanted.spec, action: wanted.action, policies: wanted.policies }));
  }
  return id;
}

/** Removes the compaction Schedule of `taskQueue` (passes already started run to their end). */
export async function deleteCompactionSchedule(client: Client, taskQueue: string): Promise<void> {
  try {
    await client.schedule.getHandle(compactionScheduleId(taskQueue)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}
