import { isUuid } from '@keelson/schema';
import { rows } from '@keelson/platform';
import type { EventLog } from '@keelson/platform';
import { randomUUID } from 'node:crypto';
import {
  streams,
  type Actor,
  type ApprovalDecision,
  type ApprovalEventPayload,
  type ApprovalEventType,
  type ApprovalKind,
  type ApprovalStatus,
} from '@keelson/schema';
import type { DataSource, EntityManager } from 'typeorm';

/** One approval as stored. */
export interface ApprovalRecord {
  id: string;
  seq: number;
  sourceKey: string;
  kind: ApprovalKind;
  status: ApprovalStatus;
  question: string;
  detail: Record<string, unknown> | null;
  runId: string | null;
  sessionId: string | null;
  swarmId: string | null;
  projectId: string | null;
  openedAt: Date;
  answeredAt: Date | null;
  answeredBy: string | null;
  answer: string | null;
  decision: ApprovalDecision | null;
  closedAt: Date | null;
  closeReason: string | null;
}

export interface OpenApproval {
  /** The gate in its owner's terms: `run:<pauseId>`, `harness:<sessionId>:<requestId>`, `swarm:<…>`. */
  sourceKey: string;
  kind: ApprovalKind;
  question: string;
  detail?: Record<string, unknown> | null;
  runId?: string | null;
  sessionId?: string | null;
  swarmId?: string | null;
  projectId?: string | null;
}

const COLUMNS = `id, seq::int AS seq, source_key AS "sourceKey", kind, status, question, detail, run_id AS "runId", session_id AS "sessionId",
  swarm_id AS "swarmId", project_id AS "projectId", opened_at AS "openedAt", answered_at AS "answeredAt", answered_by AS "answeredBy",
  answer, decision, closed_at AS "closedAt", close_reason AS "closeReason"`;

/** Longest question kept (the rest is in the owner's record). */
const QUESTION_CHARS = 4000;

const noNul = (s: string) => (s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s);

/**
 * The approval inbox's writes. Every call runs inside the transaction of the gate's own transition
 * (its owner's store passes `m`), so a row and its `approvals` event commit exactly when the gate
 * opens, is answered or closes — never apart. Each transition happens once: opening an opened gate
 * or answering an answered one changes nothing and appends nothing.
 */
export class ApprovalLedger {
  constructor(private readonly events: EventLog) {}

  private append(m: EntityManager, type: ApprovalEventType, row: ApprovalRecord, actor?: Actor | null) {
    const payload: ApprovalEventPayload = {
      approvalId: row.id,
      kind: row.kind,
      status: row.status,
      runId: row.runId,
      sessionId: row.sessionId,
      swarmId: row.swarmId,
      projectId: row.projectId,
    };
    return this.events.append(m, { stream: streams.approvals, key: row.id, type, payload, ...(actor !== undefined ? { actor } : {}) });
  }

  /** Opens the approval of a gate (APPROVAL_OPENED), once per `sourceKey`; returns the row either way. */
  async open(m: EntityManager, a: OpenApproval): Promise<ApprovalRecord> {
    const [inserted] = await rows<ApprovalRecord>(
      m,
      `INSERT INTO approvals (id, source_key, kind, question, detail, run_id, session_id, swarm_id, project_id)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9) ON CONFLICT (source_key) DO NOTHING RETURNING ${COLUMNS}`,
      [
        randomUUID(),
        a.sourceKey,
        a.kind,
        noNul(a.question.length > QUESTION_CHARS ? `${a.question.slice(0, QUESTION_CHARS - 1)}…` : a.question),
        JSON.stringify(a.detail ?? null),
        a.runId ?? null,
        a.sessionId ?? null,
        a.swarmId ?? null,
        a.projectId ?? null,
      ],
    );
    if (inserted) {
      await this.append(m, 'APPROVAL_OPENED', inserted, null);
      return inserted;
    }
    return (await this.bySourceKeyIn(m, a.sourceKey))!;
  }

  /**
   * Records the one answer of an open approval (APPROVAL_ANSWERED, with the answerer as its actor).
   * Null when it is not open (answered, expired, cancelled) or unknown: nothing is written.
   */
  async answer(m: EntityManager, sourceKey: string, a: { decision: ApprovalDecision; answer: string; actor: Actor | null }): Promise<ApprovalRecord | null> {
    const [row] = await rows<ApprovalRecord>(
      m,
      `UPDATE approvals SET status = 'ANSWERED', answered_at = now(), closed_at = now(), answered_by = $2, answer = $3, decision = $4
       WHERE source_key = $1 AND status = 'OPEN' RETURNING ${COLUMNS}`,
      [sourceKey, a.actor?.subject ?? null, noNul(a.answer), a.decision],
    );
    if (!row) return null;
    await this.append(m, 'APPROVAL_ANSWERED', row, a.actor);
    return row;
  }

  /** Closes open approvals unanswered: EXPIRED (the asker stopped waiting) or CANCELLED (the work ended). */
  async close(m: EntityManager, sourceKeys: readonly string[], status: 'EXPIRED' | 'CANCELLED', reason: string): Promise<ApprovalRecord[]> {
    if (!sourceKeys.length) return [];
    const closed = await rows<ApprovalRecord>(
      m,
      `UPDATE approvals SET status = $2, closed_at = now(), close_reason = $3
       WHERE source_key = ANY($1::text[]) AND status = 'OPEN' RETURNING ${COLUMNS}`,
      [[...sourceKeys], status, noNul(reason)],
    );
    for (const row of closed.sort((a, b) => a.seq - b.seq)) await this.append(m, status === 'EXPIRED' ? 'APPROVAL_EXPIRED' : 'APPROVAL_CANCELLED', row, null);
    return closed;
  }

  private async bySourceKeyIn(m: Pick<EntityManager, 'query'>, sourceKey: string): Promise<ApprovalRecord | null> {
    const [row] = await rows<ApprovalRecord>(m, `SELECT ${COLUMNS} FROM approvals WHERE source_key = $1`, [sourceKey]);
    return row ?? null;
  }
}

/** The inbox's reads (any process: the rows are in the mesh's one Postgres). */
export class ApprovalReader {
  constructor(private readonly dataSource: DataSource) {}

  async byIds(ids: readonly string[]): Promise<ApprovalRecord[]> {
    const valid = ids.filter(isUuid);
    if (!valid.length) return [];
    return rows<ApprovalRecord>(this.dataSource, `SELECT ${COLUMNS} FROM approvals WHERE id = ANY($1::uuid[])`, [valid]);
  }

  /** Oldest first (the order they were asked), after `after` (a seq), up to `limit` rows. */
  async page(filter: { status?: ApprovalStatus | null; kind?: ApprovalKind | null }, after: number | null, limit: number): Promise<ApprovalRecord[]> {
    return rows<ApprovalRecord>(
      this.dataSource,
      `SELECT ${COLUMNS} FROM approvals WHERE ($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR kind = $2) AND ($3::bigint IS NULL OR seq > $3)
       ORDER BY seq LIMIT $4`,
      [filter.status ?? null, filter.kind ?? null, after, limit],
    );
  }
}
