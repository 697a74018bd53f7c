import { rows } from '@keelson/platform';
import type { EventLog } from '@keelson/platform';
import { streams, type SwarmAgentView, type SwarmBusMode, type SwarmEventPayload, type SwarmEventRecord, type SwarmStatus } from '@keelson/schema';
import type { DataSource } from 'typeorm';

export interface NewSwarm {
  id: string;
  opId: string;
  task: string;
  /** The launch input, evidence verbatim. */
  input: unknown;
  projectId: string | null;
  busMode: Exclude<SwarmBusMode, 'UNAVAILABLE'>;
  busUrl: string;
  temporalWorkflowId: string;
}

export interface SwarmRecord extends NewSwarm {
  seq: number;
  status: SwarmStatus;
  workspaceId: string | null;
  channelId: string | null;
  channelName: string | null;
  webUrl: string | null;
  agents: SwarmAgentView[];
  turnsUsed: number;
  conclusion: string | null;
  error: string | null;
  eventSeq: number;
  startedAt: Date;
  endedAt: Date | null;
}

interface SwarmRow {
  id: string;
  seq: string;
  op_id: string;
  task: string;
  input: unknown;
  project_id: string | null;
  status: SwarmStatus;
  bus_mode: 'MANAGED' | 'EXTERNAL';
  bus_url: string;
  workspace_id: string | null;
  channel_id: string | null;
  channel_name: string | null;
  web_url: string | null;
  agents: SwarmAgentView[];
  turns_used: number;
  conclusion: string | null;
  error: string | null;
  event_seq: number;
  temporal_workflow_id: string;
  started_at: Date;
  ended_at: Date | null;
}

const COLUMNS = 'id, seq, op_id, task, input, project_id, status, bus_mode, bus_url, workspace_id, channel_id, channel_name, web_url, agents, turns_used, conclusion, error, event_seq, temporal_workflow_id, started_at, ended_at';

const toRecord = (r: SwarmRow): SwarmRecord => ({
  id: r.id,
  seq: Number(r.seq),
  opId: r.op_id,
  task: r.task,
  input: r.input,
  projectId: r.project_id,
  status: r.status,
  busMode: r.bus_mode,
  busUrl: r.bus_url,
  workspaceId: r.workspace_id,
  channelId: r.channel_id,
  channelName: r.channel_name,
  webUrl: r.web_url,
  agents: r.agents,
  turnsUsed: r.turns_used,
  conclusion: r.conclusion,
  error: r.error,
  eventSeq: r.event_seq,
  temporalWorkflowId: r.temporal_workflow_id,
  startedAt: r.started_at,
  endedAt: r.ended_at,
});

/** The projection of workflow state a recording updates (absent fields keep their value). */
export interface SwarmStateUpdate {
  status?: SwarmStatus;
  agents?: SwarmAgentView[];
  turnsUsed?: number;
  conclusion?: string | null;
  error?: string | null;
}

/** A turn's lease and settled result (`swarm_turns`). */
export interface TurnRecord {
  id: string;
  leaseOwner: string | null;
  leaseUntil: Date | null;
  attempts: number;
  result: unknown;
  completedAt: Date | null;
}

/** The outcome of trying to take a turn. */
export type TurnClaim =
  /** This caller holds the lease and runs the turn. */
  | { kind: 'claimed'; attempts: number }
  /** The turn already ran: here is its settled result. */
  | { kind: 'completed'; result: unknown }
  /** Another live holder runs it until `until` (renewed while it runs). */
  | { kind: 'held'; owner: string; until: Date };

/** Postgres text cannot hold NUL. */
const pgText = (s: string) => (s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s);

/**
 * The one writer of swarm state: the `swarms` row (launch input, channel, the workflow's projection),
 * the `swarms` stream of events (key = swarm id; ids only) and the turn ledger. Event batches are
 * idempotent by their index in the swarm's sequence, so a retried recording writes nothing twice.
 */
export class SwarmStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly events: EventLog,
  ) {}

  async create(s: NewSwarm): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO swarms (id, op_id, task, input, project_id, bus_mode, bus_url, temporal_workflow_id) VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8)`,
      [s.id, s.opId, pgText(s.task), JSON.stringify(s.input), s.projectId, s.busMode, s.busUrl, s.temporalWorkflowId],
    );
  }

  async get(id: string): Promise<SwarmRecord | null> {
    const [row] = await rows<SwarmRow>(this.dataSource, `SELECT ${COLUMNS} FROM swarms WHERE id = $1`, [id]);
    return row ? toRecord(row) : null;
  }

  async byIds(ids: readonly string[]): Promise<SwarmRecord[]> {
    if (ids.length === 0) return [];
    return (await rows<SwarmRow>(this.dataSource, `SELECT ${COLUMNS} FROM swarms WHERE id = ANY($1::uuid[])`, [ids])).map(toRecord);
  }

  /** Newest first; `beforeSeq` pages on. */
  async list(opts: { status?: SwarmStatus; first: number; beforeSeq?: number }): Promise<SwarmRecord[]> {
    const params: unknown[] = [opts.first];
    const where: string[] = [];
    if (opts.status) where.push(`status = $${params.push(opts.status)}`);
    if (opts.beforeSeq !== undefined) where.push(`seq < $${params.push(opts.beforeSeq)}`);
    return (
      await rows<SwarmRow>(this.dataSource, `SELECT ${COLUMNS} FROM swarms ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY seq DESC LIMIT $1`, params)
    ).map(toRecord);
  }

  async countRunning(): Promise<number> {
    const [row] = await rows<{ n: string }>(this.dataSource, `SELECT count(*) AS n FROM swarms WHERE status = 'RUNNING'`);
    return Number(row?.n ?? 0);
  }

  /** The bus channel the swarm's boot created (idempotent). */
  async setChannel(id: string, c: { workspaceId: string; channelId: string; channelName: string; webUrl: string | null; busUrl: string }): Promise<void> {
    await this.dataSource.query(`UPDATE swarms SET workspace_id = $2, channel_id = $3, channel_name = $4, web_url = $5, bus_url = $6 WHERE id = $1`, [
      id,
      c.workspaceId,
      c.channelId,
      c.channelName,
      c.webUrl,
      c.busUrl,
    ]);
  }

  /**
   * Appends the events numbered `fromIdx`, `fromIdx + 1`, … that are not recorded yet and applies
   * the state update, in one transaction. A terminal status stamps `ended_at` once.
   * @returns how many events were new
   */
  async record(id: string, fromIdx: number, batch: readonly SwarmEventRecord[], state: SwarmStateUpdate = {}): Promise<number> {
    return this.dataSource.transaction(async (m) => {
      const [row] = await rows<{ event_seq: number }>(m, 'SELECT event_seq FROM swarms WHERE id = $1 FOR UPDATE', [id]);
      if (!row) throw new Error(`swarm ${id} does not exist`);
      let appended = 0;
      for (let i = 0; i < batch.length; i++) {
        if (fromIdx + i < row.event_seq) continue;
        const e = batch[i]!;
        await this.events.append<SwarmEventPayload>(m, { stream: streams.swarms, key: id, type: e.type, payload: clipPayload(e.payload) });
        appended++;
      }
      const sets: string[] = ['event_seq = GREATEST(event_seq, $2)'];
      const params: unknown[] = [id, fromIdx + batch.length];
      if (state.status !== undefined) {
        sets.push(`status = $${params.push(state.status)}`);
        if (state.status !== 'RUNNING') sets.push('ended_at = COALESCE(ended_at, now())');
      }
      if (state.agents !== undefined) sets.push(`agents = $${params.push(JSON.stringify(state.agents))}::jsonb`);
      if (state.turnsUsed !== undefined) sets.push(`turns_used = $${params.push(state.turnsUsed)}`);
      if (state.conclusion !== undefined) sets.push(`conclusion = $${params.push(state.conclusion === null ? null : pgText(state.conclusion))}`);
      if (state.error !== undefined) sets.push(`error = $${params.push(state.error === null ? null : pgText(state.error))}`);
      await m.query(`UPDATE swarms SET ${sets.join(', ')} WHERE id = $1`, params);
      return appended;
    });
  }

  /** A start that never reached Temporal: ERROR at once, with its reason. */
  async failToStart(id: string, error: string): Promise<void> {
    await this.record(id, 0, [], { status: 'ERROR', error: `the swarm could not start: ${error}` });
  }

  // ------------------------------------------------------------------ turns

  async turnRecord(turnId: string): Promise<TurnRecord | null> {
    const [r] = await rows<{ id: string; lease_owner: string | null; lease_until: Date | null; attempts: number; result: unknown; completed_at: Date | null }>(
      this.dataSource,
      'SELECT id, lease_owner, lease_until, attempts, result, completed_at FROM swarm_turns WHERE id = $1',
      [turnId],
    );
    return r ? { id: r.id, leaseOwner: r.lease_owner, leaseUntil: r.lease_until, attempts: r.attempts, result: r.result, completedAt: r.completed_at } : null;
  }

  /**
   * Takes turn `turnId` for `owner` unless it already completed (its result) or another owner's
   * lease is still live. A lapsed lease is taken over: its holder died with its worker.
   */
  async claimTurn(turn: { id: string; swarmId: string; agentId: string; turnNo: number }, owner: string, leaseMs: number): Promise<TurnClaim> {
    return this.dataSource.transaction(async (m) => {
      await m.query(`INSERT INTO swarm_turns (id, swarm_id, agent_id, turn_no) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING`, [turn.id, turn.swarmId, turn.agentId, turn.turnNo]);
      const [r] = await rows<{ lease_owner: string | null; lease_until: Date | null; result: unknown; completed_at: Date | null; attempts: number; live: boolean }>(
        m,
        'SELECT lease_owner, lease_until, result, completed_at, attempts, (lease_until IS NOT NULL AND lease_until > now()) AS live FROM swarm_turns WHERE id = $1 FOR UPDATE',
        [turn.id],
      );
      if (r!.completed_at) return { kind: 'completed', result: r!.result };
      if (r!.live && r!.lease_owner && r!.lease_owner !== owner) return { kind: 'held', owner: r!.lease_owner, until: r!.lease_until! };
      const [taken] = await rows<{ attempts: number }>(
        m,
        `UPDATE swarm_turns SET lease_owner = $2, lease_until = now() + ($3 || ' milliseconds')::interval, attempts = attempts + 1 WHERE id = $1 RETURNING attempts`,
        [turn.id, owner, String(leaseMs)],
      );
      return { kind: 'claimed', attempts: taken!.attempts };
    });
  }

  /** Extends the lease while the turn runs; false when another owner took it over. */
  async renewTurn(turnId: string, owner: string, leaseMs: number): Promise<boolean> {
    const r = await rows(
      this.dataSource,
      `UPDATE swarm_turns SET lease_until = now() + ($3 || ' milliseconds')::interval WHERE id = $1 AND lease_owner = $2 AND completed_at IS NULL RETURNING id`,
      [turnId, owner, String(leaseMs)],
    );
    return r.length > 0;
  }

  /** Settles the turn once with its result; a second settle (another owner) changes nothing. */
  async completeTurn(turnId: string, owner: string, result: unknown): Promise<unknown> {
    const [r] = await rows<{ result: unknown }>(
      this.dataSource,
      `UPDATE swarm_turns SET result = CASE WHEN completed_at IS NULL THEN $3::jsonb ELSE result END,
         completed_at = COALESCE(completed_at, now()), lease_owner = $2, lease_until = NULL
       WHERE id = $1 RETURNING result`,
      [turnId, owner, JSON.stringify(result)],
    );
    return r?.result ?? result;
  }

  /** Drops the lease without settling (a cancelled or failed attempt), so a retry can take the turn at once. */
  async releaseTurn(turnId: string, owner: string): Promise<void> {
    await this.dataSource.query(`UPDATE swarm_turns SET lease_until = NULL WHERE id = $1 AND lease_owner = $2 AND completed_at IS NULL`, [turnId, owner]);
  }
}

function clipPayload(p: SwarmEventPayload): SwarmEventPayload {
  return p.reason !== undefined && p.reason.length > 500 ? { ...p, reason: `${p.reason.slice(0, 499)}…` } : p;
}
