import type { Actor } from '@keelson/schema';
import type { EventLog } from '@keelson/platform';
import { MeshError, runLimits, streams, type OpFramePayload, type OpFrameType, type RunStatus } from '@keelson/schema';
import type { DataSource, EntityManager } from 'typeorm';
import { clip, pgText, rows } from '@keelson/platform';

export interface NewOp {
  id: string;
  kind: string;
  title: string | null;
  input: unknown;
  ribId: string | null;
  projectId: string | null;
  steerable: boolean;
  temporalWorkflowId: string;
}

export interface OpRecord {
  id: string;
  kind: string;
  title: string | null;
  input: unknown;
  status: RunStatus;
  steerable: boolean;
  ribId: string | null;
  projectId: string | null;
  temporalWorkflowId: string;
}

/** An `ops` row: the record's fields, the multi-word ones under their column names. */
interface OpRow extends Omit<OpRecord, 'ribId' | 'projectId' | 'temporalWorkflowId'> {
  rib_id: string | null;
  project_id: string | null;
  temporal_workflow_id: string;
}

const OP_COLUMNS = 'id, kind, title, input, status, steerable, rib_id, project_id, temporal_workflow_id';

const toOp = (r: OpRow): OpRecord => ({
  id: r.id,
  kind: r.kind,
  title: r.title,
  input: r.input,
  status: r.status,
  steerable: r.steerable,
  ribId: r.rib_id,
  projectId: r.project_id,
  temporalWorkflowId: r.temporal_workflow_id,
});

/**
 * The one writer of op state and frames (`ops` stream, key = op id). The terminal status and its
 * frame commit together, once; log and progress frames are appended as they come.
 */
export class OpStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly events: EventLog,
  ) {}

  private append(m: EntityManager, type: OpFrameType, payload: OpFramePayload, actor?: Actor) {
    return this.events.append(m, { stream: streams.ops, key: payload.opId, type, payload, ...(actor ? { actor } : {}) });
  }

  async createOp(op: NewOp): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO ops (id, kind, title, input, status, rib_id, project_id, steerable, temporal_workflow_id)
       VALUES ($1, $2, $3, $4::jsonb, 'RUNNING', $5, $6, $7, $8)`,
      [op.id, op.kind, op.title, JSON.stringify(op.input ?? null), op.ribId, op.projectId, op.steerable, op.temporalWorkflowId],
    );
  }

  /** The op's row (locked for the transaction with `forUpdate`), with when it began. */
  private async readOp(m: Pick<EntityManager, 'query'>, opId: string, forUpdate = false): Promise<{ op: OpRecord; began: boolean } | null> {
    const [row] = await rows<OpRow & { began_at: Date | null }>(m, `SELECT ${OP_COLUMNS}, began_at FROM ops WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`, [opId]);
    return row ? { op: toOp(row), began: row.began_at !== null } : null;
  }

  async getOp(opId: string): Promise<OpRecord | null> {
    return (await this.readOp(this.dataSource, opId))?.op ?? null;
  }

  /** `OP_STARTED`, once. */
  async beginOp(opId: string): Promise<OpRecord> {
    return this.dataSource.transaction(async (m) => {
      const read = await this.readOp(m, opId, true);
      if (!read) throw new MeshError('NOT_FOUND', `op ${JSON.stringify(opId)} does not exist`);
      if (!read.began) {
        await m.query('UPDATE ops SET began_at = now() WHERE id = $1', [opId]);
        await this.append(m, 'OP_STARTED', { opId });
      }
      return read.op;
    });
  }

  /** A log line (cut to 4,096 characters). */
  async log(opId: string, line: string): Promise<void> {
    await this.dataSource.transaction((m) => this.append(m, 'OP_LOG', { opId, line: pgText(clip(line, runLimits.opLineChars)) }));
  }

  /** A progress frame (fraction clamped to 0…1). */
  async progress(opId: string, progress: { fraction?: number; message?: string }): Promise<void> {
    const fraction = progress.fraction === undefined ? undefined : Math.min(1, Math.max(0, progress.fraction));
    await this.dataSource.transaction((m) =>
      this.append(m, 'OP_PROGRESS', {
        opId,
        ...(fraction === undefined ? {} : { fraction }),
        ...(progress.message === undefined ? {} : { message: pgText(clip(progress.message)) }),
      }),
    );
  }

  /** Steer number `index` of the op: `OP_STEERED` with the note (and who sent it), once per index. */
  async recordSteer(opId: string, index: number, note: string, actor?: Actor): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const inserted = await rows(m, 'INSERT INTO op_steers (op_id, idx, note) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING idx', [
        opId,
        index,
        pgText(note),
      ]);
      if (inserted.length) await this.append(m, 'OP_STEERED', { opId, note: pgText(note) }, actor);
    });
  }

  /** The op succeeded: its result and `OP_SUCCEEDED`, once. */
  async completeOp(opId: string, result: unknown): Promise<boolean> {
    const json = JSON.stringify(result ?? null);
    if (Buffer.byteLength(json) > runLimits.opResultBytes) {
      throw new MeshError('BAD_USER_INPUT', `op ${opId}: the result is ${Buffer.byteLength(json)} bytes of JSON; at most ${runLimits.opResultBytes} are kept`);
    }
    return this.dataSource.transaction(async (m) => {
      const changed = await rows(
        m,
        `UPDATE ops SET status = 'SUCCEEDED', result = $2::jsonb, completed_at = now() WHERE id = $1 AND status = 'RUNNING' RETURNING id`,
        [opId, json],
      );
      if (changed.length) await this.append(m, 'OP_SUCCEEDED', { opId });
      return changed.length > 0;
    });
  }

  /** The op failed or was cancelled: status, error and its frame, once. */
  async settleOp(opId: string, status: 'FAILED' | 'CANCELLED', error?: string): Promise<boolean> {
    return this.dataSource.transaction(async (m) => {
      const changed = await rows(
        m,
        `UPDATE ops SET status = $2, error = $3, completed_at = now() WHERE id = $1 AND status = 'RUNNING' RETURNING id`,
        [opId, status, error === undefined ? null : pgText(error)],
      );
      if (changed.length) await this.append(m, `OP_${status}`, { opId, ...(error ? { error: clip(error) } : {}) });
      return changed.length > 0;
    });
  }

  /** A start that never reached Temporal. */
  async failToStart(opId: string, error: string): Promise<void> {
    await this.settleOp(opId, 'FAILED', `the op could not start: ${error}`);
  }
}
