import type { NewRibOp, OpsPort } from '@keelson/host';
import { MeshError, type OpFramePayload } from '@keelson/schema';
import type { OpStore } from '@keelson/runs';
import { opWorkflowId, startRibOpWorkflow } from '@keelson/temporal';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';

export interface PgOpsPortOptions {
  store: OpStore;
  client: Client;
  /** The mesh's task queue (the `ribOp` workflow and its bookkeeping). */
  taskQueue: string;
  /** This process's own queue: the op's holder activity runs here. */
  holderTaskQueue: string;
  heartbeatTimeoutMs: number;
  /** A registered project's name, for `KeelsonProject`; undefined for an unknown id. */
  projectName(projectId: string): string | undefined;
}

/**
 * Makes a rib's op durable from the process that registered it: the `ops` row and `OP_STARTED` in
 * Postgres, then a `ribOp` workflow whose holder activity runs on this process's own task queue.
 * Frames are appended to the `ops` stream directly, in the order the handle queued them.
 */
export class PgOpsPort implements OpsPort {
  constructor(private readonly opts: PgOpsPortOptions) {}

  async start(op: NewRibOp): Promise<void> {
    const { store } = this.opts;
    let project: string | null = null;
    if (op.projectId !== null) {
      project = this.opts.projectName(op.projectId) ?? null;
      if (project === null) throw new MeshError('NOT_FOUND', `project ${JSON.stringify(op.projectId)} does not exist`);
    }
    const workflowId = opWorkflowId(op.kind, op.id);
    await store.createOp({
      id: op.id,
      kind: op.kind,
      title: op.title,
      input: null,
      ribId: op.ribId,
      projectId: op.projectId,
      steerable: op.steerable,
      temporalWorkflowId: workflowId,
    });
    try {
      await startRibOpWorkflow(this.opts.client, {
        taskQueue: this.opts.taskQueue,
        workflowId,
        title: op.title,
        rib: op.ribId,
        project,
        input: { opId: op.id, kind: op.kind, holderTaskQueue: this.opts.holderTaskQueue, heartbeatTimeoutMs: this.opts.heartbeatTimeoutMs },
      });
    } catch (err) {
      await store.failToStart(op.id, (err as Error).message);
      throw new MeshError('SERVICE_UNAVAILABLE', `op ${op.id} could not start: ${(err as Error).message}`);
    }
    // OP_STARTED once the workflow exists (so a steer after it reaches the op), and before the rib's
    // first frame (they wait for this); the workflow's own beginOp finds it written, or writes it first.
    await store.beginOp(op.id);
  }

  /**
   * Settles an op this process registered but whose holder never took it up (the process is going
   * away): FAILED with `reason` in Postgres, and its workflow terminated with the same reason.
   */
  async abandon(opId: string, reason: string): Promise<void> {
    const op = await this.opts.store.getOp(opId);
    if (!op) return;
    await this.opts.store.settleOp(opId, 'FAILED', reason);
    await this.opts.client.workflow
      .getHandle(op.temporalWorkflowId)
      .terminate(reason)
      .catch((err: unknown) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
  }

  log(opId: string, line: string): Promise<void> {
    return this.opts.store.log(opId, line);
  }

  progress(opId: string, progress: Pick<OpFramePayload, 'fraction' | 'message'>): Promise<void> {
    return this.opts.store.progress(opId, progress);
  }
}
