import type { StopReason } from '@keelson/ribs-contract';
import { resultRows, type Queryable } from './queryable';

/** One agent turn that reached a provider and was billed: its owner, where it ran, what it cost. */
export interface UsageRecord {
  /** The turn's id (a uuid). */
  id: string;
  /** The owning rib; null for an operator's workflow. */
  ribId: string | null;
  surface: 'rib' | 'workflow' | 'chat';
  runId?: string;
  nodeId?: string;
  workflowName?: string;
  providerId: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  status: 'ok' | 'aborted' | 'timeout' | 'error';
  stopReason: StopReason;
  sessionId?: string;
  /** Model calls the turn made. */
  rounds: number;
  toolCalls: number;
  durationMs: number;
}

/** A stored row, with when it was written. */
export interface UsageRow extends UsageRecord {
  createdAt: string;
}

/** Where turns record their spend. */
export interface UsageLedger {
  /** Writes one row; a repeated id is ignored (an activity retried after its write). */
  record(row: UsageRecord): Promise<void>;
  /** Rows of a rib (or of a run), oldest first. */
  list(filter: { ribId?: string; runId?: string }): Promise<UsageRow[]>;
}

interface Row {
  id: string;
  rib_id: string | null;
  surface: 'rib' | 'workflow' | 'chat';
  run_id: string | null;
  node_id: string | null;
  workflow_name: string | null;
  provider_id: string;
  model: string;
  input_tokens: number;
  output_tokens: number;
  status: UsageRecord['status'];
  stop_reason: StopReason;
  session_id: string | null;
  rounds: number;
  tool_calls: number;
  duration_ms: number;
  created_at: Date | string;
}

function toRow(r: Row): UsageRow {
  return {
    id: r.id,
    ribId: r.rib_id,
    surface: r.surface,
    ...(r.run_id ? { runId: r.run_id } : {}),
    ...(r.node_id ? { nodeId: r.node_id } : {}),
    ...(r.workflow_name ? { workflowName: r.workflow_name } : {}),
    providerId: r.provider_id,
    model: r.model,
    inputTokens: r.input_tokens,
    outputTokens: r.output_tokens,
    status: r.status,
    stopReason: r.stop_reason,
    ...(r.session_id ? { sessionId: r.session_id } : {}),
    rounds: r.rounds,
    toolCalls: r.tool_calls,
    durationMs: r.duration_ms,
    createdAt: new Date(r.created_at).toISOString(),
  };
}

/** The ledger in Postgres (`agent_turn_usage`, created by {@link AgentTurnTables1764460800320}). */
export class PgUsageLedger implements UsageLedger {
  constructor(private readonly db: Queryable) {}

  async record(row: UsageRecord): Promise<void> {
    await this.db.query(
      `INSERT INTO agent_turn_usage (id, rib_id, surface, run_id, node_id, workflow_name, provider_id, model, input_tokens, output_tokens,
                                     status, stop_reason, session_id, rounds, tool_calls, duration_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (id) DO NOTHING`,
      [
        row.id,
        row.ribId,
        row.surface,
        row.runId ?? null,
        row.nodeId ?? null,
        row.workflowName ?? null,
        row.providerId,
        row.model,
        row.inputTokens,
        row.outputTokens,
        row.status,
        row.stopReason,
        row.sessionId ?? null,
        row.rounds,
        row.toolCalls,
        row.durationMs,
      ],
    );
  }

  async list(filter: { ribId?: string; runId?: string }): Promise<UsageRow[]> {
    const result = await this.db.query(
      `SELECT * FROM agent_turn_usage WHERE ($1::text IS NULL OR rib_id = $1) AND ($2::uuid IS NULL OR run_id = $2) ORDER BY seq`,
      [filter.ribId ?? null, filter.runId ?? null],
    );
    return resultRows<Row>(result).map(toRow);
  }
}

/** The ledger in memory (tests, and embedders without Postgres). */
export class InMemoryUsageLedger implements UsageLedger {
  readonly rows: UsageRow[] = [];

  async record(row: UsageRecord): Promise<void> {
    if (this.rows.some((r) => r.id === row.id)) return;
    this.rows.push({ ...row, createdAt: new Date().toISOString() });
  }

  async list(filter: { ribId?: string; runId?: string }): Promise<UsageRow[]> {
    return this.rows.filter((r) => (filter.ribId === undefined || r.ribId === filter.ribId) && (filter.runId === undefined || r.runId === filter.runId));
  }
}
