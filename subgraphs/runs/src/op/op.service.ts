import { randomUUID } from 'node:crypto';
import { parseInput } from '@keelson/kit';
import { errorCodeSchema, isTerminalRunStatus, isUuid, MeshError, runLimits, utf8Bytes } from '@keelson/schema';
import type { OpStore } from '@keelson/runs';
import { opSteerUpdate, opWorkflowId, startOpWorkflow, STEER_KEY_PREFIX, swarmSteerUpdate, workflowUiUrl } from '@keelson/temporal';
import { ApplicationFailure, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
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
  /** Continue-as-new threshold of this op's workflow (tests lower it). @default the runs settings' */
  maxHistoryEvents: z.number().int().min(20).optional(),
});
export type StartOpArgs = z.input<typeof startOpSchema>;

const noteSchema = z
  .string()
  .refine((s) => s.trim() !== '', 'must not be empty')
  .refine((s) => utf8Bytes(s) <= runLimits.steerNoteBytes, `must be at most ${runLimits.steerNoteBytes} bytes`);

const keySchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(runLimits.steerKeyChars, `must be at most ${runLimits.steerKeyChars} characters`)
  .nullish();

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
        input: {
          opId: id,
          kind: args.kind,
          heartbeatTimeoutMs: this.deps.settings.heartbeatTimeoutMs,
          ...((args.maxHistoryEvents ?? this.deps.settings.maxHistoryEvents) ? { maxHistoryEvents: args.maxHistoryEvents ?? this.deps.settings.maxHistoryEvents } : {}),
        },
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

  /**
   * Steers a running steerable op through its workflow's `steerNote` Update: answered at once,
   * accepted (the note is recorded as the next `OP_STEERED` frame, in order) or rejected with the
   * reason: CONFLICT once the op is finishing or finished, or over its caps (`runLimits.steersPending`
   * waiting, `runLimits.steersPerOp` in all). The same `key` is one steer however often it is sent.
   * A swarm's op is steered through the swarm's own Update.
   */
  async steer(id: string, rawNote: string, rawKey?: string | null): Promise<Op> {
    const note = parseInput(noteSchema, rawNote, 'note');
    const key = parseInput(keySchema, rawKey, 'key');
    const op = await this.require(id);
    if (!op.steerable) throw new MeshError('CAPABILITY_UNSUPPORTED', `op ${op.id} (${op.kind}) was not started as steerable`);
    const finished = (status: string) => new MeshError('CONFLICT', `op ${op.id} is ${status}; a finished op cannot be steered`);
    if (isTerminalRunStatus(op.status)) throw finished(op.status);
    const handle = this.deps.temporal.workflow.getHandle(op.temporalWorkflowId);
    const updateId = key ? `${STEER_KEY_PREFIX}${key}` : randomUUID();
    try {
      if (op.kind === 'swarm') {
        const answer = await handle.executeUpdate(swarmSteerUpdate, { args: [note], updateId });
        if (!answer.accepted) throw new MeshError('CONFLICT', `op ${op.id} refused the steer: ${answer.reason ?? 'no reason given'}`);
      } else {
        await handle.executeUpdate(opSteerUpdate, { args: [note], updateId });
      }
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        const now = await this.require(id);
        throw finished(now.status === 'RUNNING' ? 'no longer running' : now.status);
      }
      if (err instanceof WorkflowUpdateFailedError) {
        const cause = err.cause;
        const code = errorCodeSchema.safeParse(cause instanceof ApplicationFailure ? cause.type : undefined);
        throw new MeshError(code.success ? code.data : 'CONFLICT', cause?.message ?? err.message);
      }
      throw err;
    }
    return op;
  }
}
