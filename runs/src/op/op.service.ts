import { randomUUID } from 'node:crypto';
import { parseInput } from '@keelson/schema';
import { isTerminalRunStatus, isUuid, MeshError } from '@keelson/schema';
import { In, type DataSource } from 'typeorm';
import { z } from 'zod';
import type { RunsExecutor } from '../executor';
import type { RunsSettings } from '../settings';
import { steerKeySchema as keySchema, steerNoteSchema as noteSchema } from '../steerInput';
import type { OpStore } from '../store/opStore';
import { Op } from './op.entity';

export interface OpsDeps {
  dataSource: DataSource;
  store: OpStore;
  executor: RunsExecutor;
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
    return this.deps.executor.uiUrl(workflowId);
  }

  /** Registers an op and starts its `durableOp` workflow; resolves with the op once it is started. */
  async start(raw: StartOpArgs): Promise<Op> {
    const args = parseInput(startOpSchema, raw);
    const id = randomUUID();
    const workflowId = this.deps.executor.opWorkflowId(args.kind, id);
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
    const maxHistoryEvents = args.maxHistoryEvents ?? this.deps.settings.maxHistoryEvents;
    const started = await this.deps.executor.startOp({
      workflowId,
      opId: id,
      kind: args.kind,
      title,
      rib: args.ribId ?? null,
      project: args.projectId ?? null,
      heartbeatTimeoutMs: this.deps.settings.heartbeatTimeoutMs,
      ...(maxHistoryEvents ? { maxHistoryEvents } : {}),
    });
    if (!started.ok) {
      await this.deps.store.failToStart(id, started.message);
      throw new MeshError('SERVICE_UNAVAILABLE', `op ${id} could not start: ${started.message}`);
    }
    return this.require(id);
  }

  /** Cancels a running op (its implementation's signal aborts); a cancelled op is returned as is. */
  async cancel(id: string): Promise<Op> {
    const op = await this.require(id);
    if (op.status === 'CANCELLED') return op;
    if (isTerminalRunStatus(op.status)) throw new MeshError('CONFLICT', `op ${op.id} is ${op.status}; a finished op cannot be cancelled`);
    await this.deps.executor.cancel(op.temporalWorkflowId);
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
    const sent = await this.deps.executor.steerOp({ workflowId: op.temporalWorkflowId, kind: op.kind }, note, key ?? null);
    switch (sent.outcome) {
      case 'accepted':
        break;
      case 'refused':
        throw new MeshError('CONFLICT', `op ${op.id} refused the steer: ${sent.reason}`);
      case 'not-running': {
        const now = await this.require(id);
        throw finished(now.status === 'RUNNING' ? 'no longer running' : now.status);
      }
      case 'failed':
        throw new MeshError(sent.code, sent.message);
    }
    return op;
  }
}
