import { randomUUID } from 'node:crypto';
import { parseInput } from '@keelson/kit';
import { isTerminalRunStatus, isUuid, MeshError, runLimits, utf8Bytes } from '@keelson/schema';
import { opWorkflowId, startOpWorkflow, steerSignal, workflowUiUrl, type OpStore } from '@keelson/temporal';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { In, type DataSource } from 'typeorm';
import { z } from 'zod';
import type { RunsSettings } from '../settings';
import { Op } from './op.entity';

export interface OpsDeps {
  dataSource: DataSource;
  store: OpStore;
  temporal: Client;
  settings: RunsSettings;
}

const startOpSchema = z.object({
  kind: z.string().trim().regex(/^[a-z][a-z0-9._:-]{0,63}$/, 'must be 1 to 64 characters: a-z, 0-9, ".", "_", ":" and "-", starting with a letter'),
  title: z.string().trim().max(200).nullish(),
  input: z.unknown().optional(),
  projectId: z.string().refine(isUuid, 'expected a project id').nullish(),
  ribId: z.string().min(1).max(64).nullish(),
  steerable: z.boolean().default(false),
});
export type StartOpArgs = z.input<typeof startOpSchema>;

const noteSchema = z
  .string()
  .refine((s) => s.trim() !== '', 'must not be empty')
  .refine((s) => utf8Bytes(s) <= runLimits.steerNoteBytes, `must be at most ${runLimits.steerNoteBytes} bytes`);

/** Durable ops: start (the rib host's registerOp will call it), cancel, steer, read. */
export class OpService {
  constructor(private readonly deps: OpsDeps) {}

  byIds(ids: readonly string[]): Promise<Op[]> {
    const valid = ids.filter(isUuid);
    return valid.length ? this.deps.dataSource.getRepository(Op).findBy({ id: In(valid) }) : Promise.resolve([]);
  }

  async require(id: string): Promise<Op> {
    const [op] = await this.byIds([id]);
    if (!op) throw new MeshError('NOT_FOUND', `op ${JSON.stringify(id)} does not exist`);
    return op;
  }

  temporalUiUrl(workflowId: string): string | null {
    const { uiUrl, namespace } = this.deps.settings.temporal;
    return uiUrl ? workflowUiUrl(uiUrl, namespace, workflowId) : null;
  }

  /** Registers an op and starts its `durableOp` workflow; resolves with the op once it is started. */
  async start(raw: StartOpArgs): Promise<Op> {
    const args = parseInput(startOpSchema, raw);
    const id = randomUUID();
    const workflowId = opWorkflowId(args.kind, id);
    const title = args.title ?? args.kind;
    await this.deps.store.createOp({
      id,
      kind: args.kind,
      title,
      input: args.input ?? null,
      ribId: args.ribId ?? null,
      projectId: args.projectId ?? null,
      steerable: args.steerable,
      temporalWorkflowId: workflowId,
    });
    try {
      await startOpWorkflow(this.deps.temporal, {
        taskQueue: this.deps.settings.temporal.taskQueue,
        workflowId,
        title,
        rib: args.ribId,
        project: args.projectId,
        input: { opId: id, kind: args.kind, heartbeatTimeoutMs: this.deps.settings.heartbeatTimeoutMs },
      });
    } catch (err) {
      await this.deps.store.failToStart(id, (err as Error).message);
      throw new MeshError('SERVICE_UNAVAILABLE', `op ${id} could not start: ${(err as Error).message}`);
    }
    return this.require(id);
  }

  /** Cancels a running op (its implementation's signal aborts); a cancelled op is returned as is. */
  async cancel(id: string): Promise<Op> {
    const op = await this.require(id);
    if (op.status === 'CANCELLED') return op;
    if (isTerminalRunStatus(op.status)) throw new MeshError('CONFLICT', `op ${op.id} is ${op.status}; a finished op cannot be cancelled`);
    try {
      await this.deps.temporal.workflow.getHandle(op.temporalWorkflowId).cancel();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    return this.require(id);
  }

  /** Sends a steering note to a running steerable op; fails cleanly once the op is terminal. */
  async steer(id: string, rawNote: string): Promise<Op> {
    const note = parseInput(noteSchema, rawNote, 'note');
    const op = await this.require(id);
    if (!op.steerable) throw new MeshError('CAPABILITY_UNSUPPORTED', `op ${op.id} (${op.kind}) was not started as steerable`);
    const finished = () => new MeshError('CONFLICT', `op ${op.id} is ${op.status}; a finished op cannot be steered`);
    if (isTerminalRunStatus(op.status)) throw finished();
    try {
      await this.deps.temporal.workflow.getHandle(op.temporalWorkflowId).signal(steerSignal, note);
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        const now = await this.require(id);
        throw new MeshError('CONFLICT', `op ${op.id} is ${now.status === 'RUNNING' ? 'no longer running' : now.status}; a finished op cannot be steered`);
      }
      throw err;
    }
    return op;
  }
}
