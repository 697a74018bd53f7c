import type { HarnessControlPlane, TaskRecord } from '@keelson/harness';
import { MeshError, workflowKinds, workflowTypes, type HarnessTaskInput } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { searchAttributeKeys } from '@keelson/temporal';
import type { TemporalLink } from '../temporalLink';

/** Starts tasks as `harnessTask` workflows; the worker's activity runs the CLI turn. */
export class TaskService {
  constructor(
    private readonly plane: HarnessControlPlane,
    private readonly temporal: TemporalLink,
    private readonly log: Logger,
    private readonly heartbeatTimeoutMs: number,
  ) {}

  /**
   * Records the task (and, for harnesses that pin ids, its session), then starts its workflow with
   * the search attributes operators find it by. A workflow that cannot start fails the task.
   */
  async runTask(harnessId: string, prompt: string, projectId: string | null): Promise<TaskRecord> {
    const task = await this.plane.createTask({ harnessId, prompt, projectId });
    const input: HarnessTaskInput = { taskId: task.id, harnessId: task.harnessId, projectId: task.projectId, heartbeatTimeoutMs: this.heartbeatTimeoutMs };
    try {
      const client = await this.temporal.connect('tasks');
      const handle = await client.workflow.start(workflowTypes.harnessTask, {
        taskQueue: this.temporal.taskQueue,
        workflowId: task.workflowId,
        args: [input],
        typedSearchAttributes: [
          { key: searchAttributeKeys.kind, value: workflowKinds.task },
          { key: searchAttributeKeys.workflowName, value: workflowTypes.harnessTask },
          { key: searchAttributeKeys.harness, value: task.harnessId },
          ...(task.projectId ? [{ key: searchAttributeKeys.project, value: task.projectId }] : []),
        ],
        memo: { title: `${task.harnessId} task: ${prompt.length > 80 ? `${prompt.slice(0, 79)}…` : prompt}` },
        staticSummary: `${task.harnessId} task · ${task.id.slice(0, 8)}: ${prompt.length > 120 ? `${prompt.slice(0, 119)}…` : prompt}`,
        staticDetails: [
          `**${task.harnessId} task** \`${task.id}\``,
          ...(task.projectId ? [`- project: \`${task.projectId}\``] : []),
          '',
          `GraphQL: \`{ task(id: "${task.id}") { status error } }\``,
        ].join('\n'),
      });
      await this.plane.store.setTaskRun(task.id, handle.firstExecutionRunId);
    } catch (err) {
      this.log.error({ err, taskId: task.id }, 'starting a harnessTask workflow failed');
      await this.plane.settleTask(task.id, { status: 'FAILED', error: `the workflow could not start: ${(err as Error).message}` });
      throw err instanceof MeshError ? err : new MeshError('SERVICE_UNAVAILABLE', `Temporal did not start the task's workflow (${(err as Error).message}); retry`);
    }
    return (await this.plane.store.task(task.id))!;
  }

  /** The Web UI page of a task's workflow, when the UI's URL is known. */
  uiUrl(workflowId: string, runId: string | null): string | null {
    return this.temporal.uiUrl(workflowId, runId);
  }
}
