import { orderedEntityKey, sqlMigration } from '@keelson/platform';

/**
 * The agent-turn tables: the usage ledger (one row per billed turn, under its owning rib) and the
 * sessions turns continue. In the runs migration list (`runsMigrations`), which the runs subgraph and
 * every worker run; {@link PgUsageLedger} and {@link PgSessionStore} are the only writers. Idempotent
 * (`IF NOT EXISTS`), so another service writing the ledger (the ribs subgraph's rib turns) may list it
 * in its own migrations too and boot first.
 */
export const AgentTurnTables1764460800320 = sqlMigration('AgentTurnTables1764460800320', {
  up: [
    `CREATE TABLE IF NOT EXISTS agent_turn_usage (
      ${orderedEntityKey},
      rib_id text,
      surface text NOT NULL,
      run_id uuid,
      node_id text,
      workflow_name text,
      provider_id text NOT NULL,
      model text NOT NULL,
      input_tokens int NOT NULL,
      output_tokens int NOT NULL,
      status text NOT NULL,
      stop_reason text NOT NULL,
      session_id text,
      rounds int NOT NULL,
      tool_calls int NOT NULL,
      duration_ms int NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    'CREATE INDEX IF NOT EXISTS agent_turn_usage_rib_seq ON agent_turn_usage (rib_id, seq)',
    'CREATE INDEX IF NOT EXISTS agent_turn_usage_run ON agent_turn_usage (run_id) WHERE run_id IS NOT NULL',
    `CREATE TABLE IF NOT EXISTS agent_sessions (
      id text PRIMARY KEY,
      provider_id text NOT NULL,
      model text NOT NULL,
      rib_id text,
      messages jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
  ],
  down: [
    'DROP TABLE IF EXISTS agent_sessions',
    'DROP TABLE IF EXISTS agent_turn_usage',
  ],
});
