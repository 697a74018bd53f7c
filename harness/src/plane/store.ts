import { rows } from '@keelson/platform';
import type { EventLog } from '@keelson/platform';
import { hostname } from 'node:os';
import { ApprovalLedger } from '@keelson/operator';
import { actorOf, MeshError, streams, type ApprovalDecision, type EventEnvelope, type HarnessEventPayloads, type HarnessEventType, type RunStatus } from '@keelson/schema';
import { currentCaller } from '@keelson/service';
import type { DataSource, EntityManager } from 'typeorm';
import type { HarnessId, SessionId } from '../ids';

/** A session the mesh knows, as stored. */
export interface SessionRecord {
  id: SessionId;
  harnessId: HarnessId;
  nativeId: string;
  projectId: string | null;
  workspaceId: string | null;
  cwd: string | null;
  title: string | null;
  /** `started` (startSession), `adopted` (resumeSession / a turn on a native session), `task` (runTask). */
  origin: string;
  /** `idle`, `running` or `rotated`. */
  status: string;
  taskId: string | null;
  successorId: string | null;
  eventSeq: number;
  announcedEntries: number;
  turns: number;
  turnId: string | null;
  turnHolder: string | null;
  turnPgid: number | null;
  turnHost: string | null;
  turnStartedAt: Date | null;
  turnExpiresAt: Date | null;
  interruptRequested: boolean;
  /** The model its turns use unless a turn names one (startSession's `model`); null: the CLI's configured one. */
  model: string | null;
  /** The reasoning effort its turns use unless a turn names one; null: the CLI's default. */
  effort: string | null;
  createdAt: Date;
  updatedAt: Date;
}

const SESSION_COLUMNS = `id, harness_id AS "harnessId", native_id AS "nativeId", project_id AS "projectId", workspace_id AS "workspaceId",
  cwd, title, origin, status, task_id AS "taskId", successor_id AS "successorId", event_seq::int AS "eventSeq",
  announced_entries AS "announcedEntries", turns, turn_id AS "turnId", turn_holder AS "turnHolder", turn_pgid AS "turnPgid",
  turn_host AS "turnHost", turn_started_at AS "turnStartedAt", turn_expires_at AS "turnExpiresAt",
  interrupt_requested AS "interruptRequested", model, effort, created_at AS "createdAt", updated_at AS "updatedAt"`;

/** What a new session is recorded with; the rest of its {@link SessionRecord} starts empty. */
export type NewSession = Pick<SessionRecord, 'id' | 'harnessId' | 'nativeId' | 'projectId' | 'workspaceId' | 'cwd' | 'title' | 'taskId'> & {
  origin: 'started' | 'adopted' | 'task';
} & Partial<Pick<SessionRecord, 'model' | 'effort'>>;

export interface HarnessApprovalRecord {
  sessionId: string;
  requestId: string;
  turnId: string | null;
  toolName: string;
  toolInput: unknown;
  status: 'pending' | 'approved' | 'denied';
  createdAt: Date;
}

/** A question a CLI asked the user, and its answer once given. */
export interface HarnessPromptRecord {
  sessionId: string;
  promptId: string;
  turnId: string | null;
  question: string;
  header: string | null;
  options: { label: string; description?: string | null }[];
  multiSelect: boolean;
  status: 'pending' | 'answered';
  answer: string | null;
  createdAt: Date;
}

const PROMPT_COLUMNS = `session_id AS "sessionId", prompt_id AS "promptId", turn_id AS "turnId", question, header, options,
  multi_select AS "multiSelect", status, answer, created_at AS "createdAt"`;

export interface TaskRecord {
  id: string;
  harnessId: HarnessId;
  prompt: string;
  projectId: string | null;
  cwd: string;
  sessionId: SessionId | null;
  status: RunStatus;
  result: string | null;
  error: string | null;
  workflowId: string;
  runId: string | null;
  attempts: number;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}

const TASK_COLUMNS = `id, harness_id AS "harnessId", prompt, project_id AS "projectId", cwd, session_id AS "sessionId", status, result, error,
  workflow_id AS "workflowId", run_id AS "runId", attempts, created_at AS "createdAt", updated_at AS "updatedAt", completed_at AS "completedAt"`;

/** The in-flight turn holding a session, as a TURN_IN_FLIGHT error names it. */
export interface TurnHolder {
  turnId: string;
  holder: string;
  startedAt: Date | null;
}

/** The approval inbox's name of a harness permission request. */
export function harnessApprovalKey(sessionId: string, requestId: string): string {
  return `harness:${sessionId}:${requestId}`;
}

/** Who this process is, in leases. */
export const HOST = hostname();

/**
 * The control plane's durable state in Postgres: sessions with their per-session event sequence,
 * turn leases (a row lock, not an in-memory flag: a second process sees the turn in flight),
 * aliases, approvals and tasks. Every harness event is appended to the `harness` stream in the
 * transaction of the state change it reports.
 */
export class HarnessStore {
  private readonly ledger: ApprovalLedger;

  constructor(
    readonly dataSource: DataSource,
    private readonly events: EventLog,
  ) {
    this.ledger = new ApprovalLedger(events);
  }

  async byIds(ids: readonly string[]): Promise<SessionRecord[]> {
    if (!ids.length) return [];
    return rows<SessionRecord>(this.dataSource, `SELECT ${SESSION_COLUMNS} FROM harness_sessions WHERE id = ANY($1)`, [ids]);
  }

  async get(id: string): Promise<SessionRecord | null> {
    return (await this.byIds([id]))[0] ?? null;
  }

  /** Sessions the mesh knows, newest activity first; rotated ids are retired from the listing. */
  async list(filter: { harnessId?: string | null; projectId?: string | null }): Promise<SessionRecord[]> {
    return rows<SessionRecord>(
      this.dataSource,
      `SELECT ${SESSION_COLUMNS} FROM harness_sessions
       WHERE status <> 'rotated' AND ($1::text IS NULL OR harness_id = $1) AND ($2::uuid IS NULL OR project_id = $2)
       ORDER BY updated_at DESC, id`,
      [filter.harnessId ?? null, filter.projectId ?? null],
    );
  }

  /** The id `id` resolves to after following durable aliases (rotation), or `id` itself. */
  async resolveAlias(id: string): Promise<string> {
    let current = id;
    for (let hops = 0; hops < 32; hops++) {
      const [row] = await rows<{ sessionId: string }>(this.dataSource, 'SELECT session_id AS "sessionId" FROM harness_session_aliases WHERE alias = $1', [current]);
      if (!row || row.sessionId === current) return current;
      current = row.sessionId;
    }
    return current;
  }

  /** Which of `ids` are retired: aliases of another session (rotation), in one statement. */
  async retired(ids: readonly string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const found = await rows<{ alias: string }>(this.dataSource, 'SELECT alias FROM harness_session_aliases WHERE alias = ANY($1) AND session_id <> alias', [ids]);
    return new Set(found.map((r) => r.alias));
  }

  /** Earlier ids of each session (aliases that resolve straight to it), batched. */
  async aliasesOf(ids: readonly string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(ids.map((id) => [id, []]));
    if (!ids.length) return out;
    for (const r of await rows<{ alias: string; sessionId: string }>(this.dataSource, 'SELECT alias, session_id AS "sessionId" FROM harness_session_aliases WHERE session_id = ANY($1) ORDER BY created_at', [ids])) {
      out.get(r.sessionId)?.push(r.alias);
    }
    return out;
  }

  /** Every id of the session `id` belongs to: its predecessors and successors through rotation. */
  async lineage(id: string): Promise<string[]> {
    const found = await rows<{ id: string }>(
      this.dataSource,
      `WITH RECURSIVE g(id) AS (
         SELECT $1::text
         UNION
         SELECT CASE WHEN a.alias = g.id THEN a.session_id ELSE a.alias END
         FROM harness_session_aliases a JOIN g ON a.alias = g.id OR a.session_id = g.id
       ) SELECT id FROM g`,
      [id],
    );
    return found.map((r) => r.id);
  }

  /** Appends one event of a session inside `m`, taking the session's next sequence. */
  async appendIn<T extends HarnessEventType | 'TRANSCRIPT_APPENDED'>(
    m: EntityManager,
    sessionId: string,
    type: T,
    payload: T extends HarnessEventType ? HarnessEventPayloads[T] : Record<string, unknown>,
    turnId: string | null = null,
  ): Promise<EventEnvelope> {
    // The per-session sequence counts client-facing HarnessEvents only: TRANSCRIPT_APPENDED (capture's)
    // carries the sequence of the event it follows, so clients never see a gap.
    const step = type === 'TRANSCRIPT_APPENDED' ? 0 : 1;
    const [seq] = await rows<{ seq: number; harnessId: string; taskId: string | null }>(
      m,
      'UPDATE harness_sessions SET event_seq = event_seq + $2, updated_at = now() WHERE id = $1 RETURNING event_seq::int AS seq, harness_id AS "harnessId", task_id AS "taskId"',
      [sessionId, step],
    );
    if (!seq) throw new MeshError('NOT_FOUND', `session ${sessionId} is not known to the mesh`);
    return this.events.append(m, {
      stream: streams.harness,
      key: sessionId,
      type,
      payload: { sessionId, harnessId: seq.harnessId, seq: seq.seq, turnId, taskId: seq.taskId, ...payload },
    });
  }

  /** Appends one event in its own transaction. */
  append<T extends HarnessEventType | 'TRANSCRIPT_APPENDED'>(
    sessionId: string,
    type: T,
    payload: T extends HarnessEventType ? HarnessEventPayloads[T] : Record<string, unknown>,
    turnId: string | null = null,
  ): Promise<EventEnvelope> {
    return this.dataSource.transaction((m) => this.appendIn(m, sessionId, type, payload, turnId));
  }

  /**
   * Records a session and its SESSION_CREATED in one transaction. A session recorded meanwhile (two
   * adopters racing) is returned as it is, with no second event.
   */
  async create(s: NewSession, turn?: { turnId: string; holder: string; leaseMs: number }): Promise<{ record: SessionRecord; created: boolean }> {
    return this.dataSource.transaction(async (m) => {
      const inserted = await rows<{ id: string }>(
        m,
        `INSERT INTO harness_sessions (id, harness_id, native_id, project_id, workspace_id, cwd, title, origin, task_id,
           status, turn_id, turn_holder, turn_host, turn_started_at, turn_expires_at, model, effort)
         VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9, CASE WHEN $10::uuid IS NULL THEN 'idle' ELSE 'running' END, $10, $11, $12,
           CASE WHEN $10::uuid IS NULL THEN NULL ELSE now() END, CASE WHEN $10::uuid IS NULL THEN NULL ELSE now() + ($13::int * interval '1 millisecond') END, $14, $15)
         ON CONFLICT (id) DO NOTHING RETURNING id`,
        [s.id, s.harnessId, s.nativeId, s.projectId, s.workspaceId, s.cwd, s.title, s.origin, s.taskId, turn?.turnId ?? null, turn?.holder ?? null, HOST, turn?.leaseMs ?? 0, s.model ?? null, s.effort ?? null],
      );
      if (inserted.length) {
        await this.appendIn(m, s.id, 'SESSION_CREATED', { projectId: s.projectId, cwd: s.cwd, title: s.title, origin: s.origin }, turn?.turnId ?? null);
      }
      const [record] = await rows<SessionRecord>(m, `SELECT ${SESSION_COLUMNS} FROM harness_sessions WHERE id = $1`, [s.id]);
      return { record: record!, created: inserted.length > 0 };
    });
  }

  /**
   * Takes the session's turn lease (one UPDATE: atomic across processes). A lease whose holder
   * stopped renewing it is taken over, and its turn is reported: `lost`.
   * @throws MeshError TURN_IN_FLIGHT naming the holder when a live turn holds it.
   */
  async acquireTurn(sessionId: string, turnId: string, holder: string, leaseMs: number): Promise<{ record: SessionRecord; lost: string | null }> {
    const taken = await rows<SessionRecord & { lost: string | null }>(
      this.dataSource,
      `WITH prev AS (SELECT id AS prev_id, turn_id AS prev_turn FROM harness_sessions WHERE id = $1 FOR UPDATE)
       UPDATE harness_sessions s SET turn_id = $2, turn_holder = $3, turn_host = $4, turn_pgid = NULL, turn_started_at = now(),
         turn_expires_at = now() + ($5::int * interval '1 millisecond'), interrupt_requested = false, status = 'running', updated_at = now()
       FROM prev WHERE s.id = prev.prev_id AND (s.turn_id IS NULL OR s.turn_expires_at < now())
       RETURNING ${SESSION_COLUMNS}, prev.prev_turn AS lost`,
      [sessionId, turnId, holder, HOST, leaseMs],
    );
    if (taken[0]) {
      const { lost, ...record } = taken[0];
      return { record: record as SessionRecord, lost };
    }
    const current = await this.get(sessionId);
    if (!current) throw new MeshError('NOT_FOUND', `session ${sessionId} is not known to the mesh`);
    throw new MeshError('TURN_IN_FLIGHT', `session ${sessionId} has a turn in flight (turn ${current.turnId}, held by ${current.turnHolder} since ${current.turnStartedAt?.toISOString() ?? '?'}); wait for its TurnComplete or interrupt it`, {
      turnId: current.turnId,
      holder: current.turnHolder,
    });
  }

  /**
   * What the session's stream says of one turn id: whether any event carries it, and how it ended
   * (its TurnComplete), so a turn with a caller-chosen id (a steer's) is started at most once.
   */
  async turnTrace(sessionId: string, turnId: string): Promise<{ started: boolean; completed: HarnessEventPayloads['TURN_COMPLETE'] | null }> {
    const found = await rows<{ type: string; payload: HarnessEventPayloads['TURN_COMPLETE'] }>(
      this.dataSource,
      `SELECT type, payload FROM events WHERE stream = $1 AND key = $2 AND payload->>'turnId' = $3 ORDER BY seq`,
      [streams.harness, sessionId, turnId],
    );
    const complete = found.find((e) => e.type === 'TURN_COMPLETE');
    return { started: found.length > 0, completed: complete ? complete.payload : null };
  }

  async setTurnPgid(sessionId: string, turnId: string, pgid: number): Promise<void> {
    await this.dataSource.query('UPDATE harness_sessions SET turn_pgid = $3 WHERE id = $1 AND turn_id = $2', [sessionId, turnId, pgid]);
  }

  /** Extends a held lease; says whether it is still held and whether an interrupt was asked for. */
  async renewTurn(sessionId: string, turnId: string, leaseMs: number): Promise<{ held: boolean; interruptRequested: boolean }> {
    const [row] = await rows<{ interruptRequested: boolean }>(
      this.dataSource,
      `UPDATE harness_sessions SET turn_expires_at = now() + ($3::int * interval '1 millisecond')
       WHERE id = $1 AND turn_id = $2 RETURNING interrupt_requested AS "interruptRequested"`,
      [sessionId, turnId, leaseMs],
    );
    return row ? { held: true, interruptRequested: row.interruptRequested } : { held: false, interruptRequested: false };
  }

  /** Flags the in-flight turn for its holder to kill; the turn, or null when none is in flight. */
  async requestInterrupt(sessionId: string): Promise<TurnHolder | null> {
    const [row] = await rows<TurnHolder>(
      this.dataSource,
      `UPDATE harness_sessions SET interrupt_requested = true WHERE id = $1 AND turn_id IS NOT NULL AND turn_expires_at >= now()
       RETURNING turn_id AS "turnId", turn_holder AS "holder", turn_started_at AS "startedAt"`,
      [sessionId],
    );
    return row ?? null;
  }

  /** TURN_COMPLETE and the lease's release in one transaction: whoever sees the event can send the next turn. */
  async completeTurn(sessionId: string, turnId: string, payload: HarnessEventPayloads['TURN_COMPLETE']): Promise<EventEnvelope> {
    return this.dataSource.transaction(async (m) => {
      await m.query(
        `UPDATE harness_sessions SET turn_id = NULL, turn_holder = NULL, turn_pgid = NULL, turn_host = NULL, turn_started_at = NULL,
           turn_expires_at = NULL, interrupt_requested = false, status = CASE WHEN status = 'rotated' THEN status ELSE 'idle' END, turns = turns + 1
         WHERE id = $1 AND turn_id = $2`,
        [sessionId, turnId],
      );
      return this.appendIn(m, sessionId, 'TURN_COMPLETE', payload, turnId);
    });
  }

  /** Announces new final transcript entries (memory capture fetches them by id). */
  async announceEntries(sessionId: string, ids: string[], total: number, turnId: string | null): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await m.query('UPDATE harness_sessions SET announced_entries = $2 WHERE id = $1', [sessionId, total]);
      for (let i = 0; i < ids.length; i += 1000) await this.appendIn(m, sessionId, 'TRANSCRIPT_APPENDED', { entryIds: ids.slice(i, i + 1000) }, turnId);
    });
  }

  /**
   * A rotation: the session continues under `next`. One transaction records the successor (taking
   * over the predecessor's turn lease), the durable alias and SESSION_UPDATED keyed by the new id.
   */
  async rotate(previous: SessionRecord, next: { id: SessionId; nativeId: string }): Promise<SessionRecord> {
    return this.dataSource.transaction(async (m) => {
      await m.query(
        `INSERT INTO harness_sessions (id, harness_id, native_id, project_id, workspace_id, cwd, title, origin, status, task_id,
           turn_id, turn_holder, turn_pgid, turn_host, turn_started_at, turn_expires_at, turns, model, effort)
         SELECT $2, harness_id, $3, project_id, workspace_id, cwd, title, origin, status, task_id,
           turn_id, turn_holder, turn_pgid, turn_host, turn_started_at, turn_expires_at, turns, model, effort
         FROM harness_sessions WHERE id = $1
         ON CONFLICT (id) DO NOTHING`,
        [previous.id, next.id, next.nativeId],
      );
      await m.query(
        `UPDATE harness_sessions SET status = 'rotated', successor_id = $2, turn_id = NULL, turn_holder = NULL, turn_pgid = NULL,
           turn_expires_at = NULL, updated_at = now() WHERE id = $1`,
        [previous.id, next.id],
      );
      await m.query(
        `INSERT INTO harness_session_aliases (alias, session_id, kind) VALUES ($1, $2, 'rotation')
         ON CONFLICT (alias) DO UPDATE SET session_id = EXCLUDED.session_id`,
        [previous.id, next.id],
      );
      await m.query("UPDATE harness_tasks SET session_id = $2, updated_at = now() WHERE session_id = $1", [previous.id, next.id]);
      await this.appendIn(m, next.id, 'SESSION_UPDATED', { previousSessionId: previous.id, status: 'rotated' }, previous.turnId);
      const [record] = await rows<SessionRecord>(m, `SELECT ${SESSION_COLUMNS} FROM harness_sessions WHERE id = $1`, [next.id]);
      return record!;
    });
  }

  /** Records permission requests with their APPROVAL_REQUEST events. */
  async requestApprovals(sessionId: string, turnId: string, requests: { requestId: string; toolName: string; input: unknown; reason: string }[]): Promise<void> {
    if (!requests.length) return;
    await this.dataSource.transaction(async (m) => {
      for (const r of requests) {
        const inserted = await rows<{ requestId: string; projectId: string | null; harnessId: string }>(
          m,
          `INSERT INTO harness_approvals (session_id, request_id, turn_id, tool_name, tool_input) VALUES ($1, $2, $3, $4, $5::jsonb)
           ON CONFLICT DO NOTHING
           RETURNING request_id AS "requestId", (SELECT project_id FROM harness_sessions WHERE id = $1) AS "projectId",
             (SELECT harness_id FROM harness_sessions WHERE id = $1) AS "harnessId"`,
          [sessionId, r.requestId, turnId, r.toolName, JSON.stringify(r.input ?? null)],
        );
        if (!inserted.length) continue;
        await this.appendIn(m, sessionId, 'APPROVAL_REQUEST', r, turnId);
        await this.ledger.open(m, {
          sourceKey: harnessApprovalKey(sessionId, r.requestId),
          kind: 'HARNESS_TOOL',
          question: `${inserted[0]!.harnessId ?? 'The harness'} asks to use ${r.toolName}${r.reason ? `: ${r.reason}` : ''}`,
          detail: { requestId: r.requestId, toolName: r.toolName, input: r.input ?? null, reason: r.reason, turnId },
          sessionId,
          projectId: inserted[0]!.projectId,
        });
      }
    });
  }

  async approvals(sessionId: string, status?: HarnessApprovalRecord['status']): Promise<HarnessApprovalRecord[]> {
    return rows<HarnessApprovalRecord>(
      this.dataSource,
      `SELECT session_id AS "sessionId", request_id AS "requestId", turn_id AS "turnId", tool_name AS "toolName", tool_input AS "toolInput", status, created_at AS "createdAt"
       FROM harness_approvals WHERE session_id = $1 AND ($2::text IS NULL OR status = $2) ORDER BY created_at, request_id`,
      [sessionId, status ?? null],
    );
  }

  /**
   * Answers a pending approval with its APPROVAL_RESOLVED event.
   * @throws MeshError NOT_FOUND (unknown request) or CONFLICT (already answered).
   */
  async resolveApproval(sessionId: string, requestId: string, decision: ApprovalDecision): Promise<HarnessApprovalRecord> {
    return this.dataSource.transaction(async (m) => {
      const [row] = await rows<HarnessApprovalRecord>(
        m,
        `SELECT session_id AS "sessionId", request_id AS "requestId", turn_id AS "turnId", tool_name AS "toolName", tool_input AS "toolInput", status, created_at AS "createdAt"
         FROM harness_approvals WHERE session_id = $1 AND request_id = $2 FOR UPDATE`,
        [sessionId, requestId],
      );
      if (!row) throw new MeshError('NOT_FOUND', `session ${sessionId} has no approval request ${requestId}`);
      if (row.status !== 'pending') throw new MeshError('CONFLICT', `approval request ${requestId} was already answered (${row.status})`);
      await m.query('UPDATE harness_approvals SET status = $3, resolved_at = now() WHERE session_id = $1 AND request_id = $2', [sessionId, requestId, decision === 'APPROVE' ? 'approved' : 'denied']);
      await this.appendIn(m, sessionId, 'APPROVAL_RESOLVED', { requestId, decision }, null);
      const caller = currentCaller();
      await this.ledger.answer(m, harnessApprovalKey(sessionId, requestId), { decision, answer: decision, actor: caller ? actorOf(caller) : null });
      return row;
    });
  }

  /** Records a question the CLI asked with its PROMPT_REQUEST event (once per prompt id). */
  async requestPrompt(sessionId: string, turnId: string, p: HarnessEventPayloads['PROMPT_REQUEST']): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const inserted = await m.query(
        `INSERT INTO harness_prompts (session_id, prompt_id, turn_id, question, header, options, multi_select) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7)
         ON CONFLICT DO NOTHING RETURNING prompt_id`,
        [sessionId, p.promptId, turnId, p.question, p.header ?? null, JSON.stringify(p.options), p.multiSelect],
      );
      if ((inserted as unknown[]).length) await this.appendIn(m, sessionId, 'PROMPT_REQUEST', p, turnId);
    });
  }

  async prompts(sessionId: string, status?: HarnessPromptRecord['status']): Promise<HarnessPromptRecord[]> {
    return rows<HarnessPromptRecord>(
      this.dataSource,
      `SELECT ${PROMPT_COLUMNS} FROM harness_prompts WHERE session_id = $1 AND ($2::text IS NULL OR status = $2) ORDER BY created_at, prompt_id`,
      [sessionId, status ?? null],
    );
  }

  /**
   * Records the answer to a pending prompt with its PROMPT_ANSWERED event.
   * @throws MeshError NOT_FOUND (unknown prompt) or CONFLICT (already answered).
   */
  async answerPrompt(sessionId: string, promptId: string, text: string): Promise<HarnessPromptRecord> {
    return this.dataSource.transaction(async (m) => {
      const [row] = await rows<HarnessPromptRecord>(m, `SELECT ${PROMPT_COLUMNS} FROM harness_prompts WHERE session_id = $1 AND prompt_id = $2 FOR UPDATE`, [sessionId, promptId]);
      if (!row) throw new MeshError('NOT_FOUND', `session ${sessionId} has no prompt ${promptId}`);
      if (row.status !== 'pending') throw new MeshError('CONFLICT', `prompt ${promptId} was already answered`);
      await m.query("UPDATE harness_prompts SET status = 'answered', answer = $3, answered_at = now() WHERE session_id = $1 AND prompt_id = $2", [sessionId, promptId, text]);
      await this.appendIn(m, sessionId, 'PROMPT_ANSWERED', { promptId, text }, null);
      return row;
    });
  }

  // ---- tasks ----

  async createTask(t: { id: string; harnessId: HarnessId; prompt: string; projectId: string | null; cwd: string; sessionId: SessionId | null; workflowId: string }): Promise<TaskRecord> {
    const [row] = await rows<TaskRecord>(
      this.dataSource,
      `INSERT INTO harness_tasks (id, harness_id, prompt, project_id, cwd, session_id, status, workflow_id)
       VALUES ($1, $2, $3, $4, $5, $6, 'RUNNING', $7) RETURNING ${TASK_COLUMNS}`,
      [t.id, t.harnessId, t.prompt, t.projectId, t.cwd, t.sessionId, t.workflowId],
    );
    return row!;
  }

  async tasksByIds(ids: readonly string[]): Promise<TaskRecord[]> {
    if (!ids.length) return [];
    return rows<TaskRecord>(this.dataSource, `SELECT ${TASK_COLUMNS} FROM harness_tasks WHERE id = ANY($1::uuid[])`, [ids]);
  }

  async task(id: string): Promise<TaskRecord | null> {
    return (await this.tasksByIds([id]))[0] ?? null;
  }

  async setTaskRun(id: string, runId: string): Promise<void> {
    await this.dataSource.query('UPDATE harness_tasks SET run_id = $2, updated_at = now() WHERE id = $1', [id, runId]);
  }

  async setTaskSession(id: string, sessionId: string): Promise<void> {
    await this.dataSource.query('UPDATE harness_tasks SET session_id = $2, updated_at = now() WHERE id = $1', [id, sessionId]);
  }

  /**
   * One attempt at a time per task: an attempt takes the task's lease and keeps renewing it; a retry
   * while an earlier attempt still renews gets TURN_IN_FLIGHT (retryable).
   */
  async acquireTaskLease(id: string, holder: string, leaseMs: number): Promise<TaskRecord> {
    const [row] = await rows<TaskRecord>(
      this.dataSource,
      `UPDATE harness_tasks SET lease_holder = $2, lease_expires_at = now() + ($3::int * interval '1 millisecond'), attempts = attempts + 1, updated_at = now()
       WHERE id = $1 AND (lease_holder IS NULL OR lease_expires_at < now() OR lease_holder = $2) RETURNING ${TASK_COLUMNS}`,
      [id, holder, leaseMs],
    );
    if (row) return row;
    const task = await this.task(id);
    if (!task) throw new MeshError('NOT_FOUND', `task ${id} does not exist`);
    throw new MeshError('TURN_IN_FLIGHT', `task ${id} is still running in an earlier attempt; retry after its lease lapses`);
  }

  async renewTaskLease(id: string, holder: string, leaseMs: number): Promise<boolean> {
    const r = await rows<{ id: string }>(
      this.dataSource,
      `UPDATE harness_tasks SET lease_expires_at = now() + ($3::int * interval '1 millisecond') WHERE id = $1 AND lease_holder = $2 RETURNING id`,
      [id, holder, leaseMs],
    );
    return r.length > 0;
  }

  async releaseTaskLease(id: string, holder: string): Promise<void> {
    await this.dataSource.query('UPDATE harness_tasks SET lease_holder = NULL, lease_expires_at = NULL WHERE id = $1 AND lease_holder = $2', [id, holder]);
  }

  /** The task's final status (first settle wins: a retried settle changes nothing). */
  async settleTask(id: string, status: RunStatus, fields: { result?: string | null; error?: string | null }): Promise<TaskRecord | null> {
    const [row] = await rows<TaskRecord>(
      this.dataSource,
      `UPDATE harness_tasks SET status = $2, result = COALESCE($3, result), error = COALESCE($4, error), completed_at = now(), updated_at = now(),
         lease_holder = NULL, lease_expires_at = NULL
       WHERE id = $1 AND status = 'RUNNING' RETURNING ${TASK_COLUMNS}`,
      [id, status, fields.result ?? null, fields.error ?? null],
    );
    return row ?? (await this.task(id));
  }
}
