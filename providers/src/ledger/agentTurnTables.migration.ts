/** The slice of TypeORM's QueryRunner a migration uses (kept structural: this package has no TypeORM). */
interface MigrationQueries {
  query(sql: string): Promise<unknown>;
}

/**
 * The agent-turn tables: the usage ledger (one row per billed turn, under its owning rib) and the
 * sessions turns continue. In the runs migration list (`runsMigrations`), which the runs subgraph and
 * every worker run; {@link PgUsageLedger} and {@link PgSessionStore} are the only writers. Idempotent
 * (`IF NOT EXISTS`), so another service writing the ledger (the ribs subgraph's rib turns) may list it
 * in its own migrations too and boot first.
 */
export class AgentTurnTables1764460800320 {
  name = 'AgentTurnTables1764460800320';

  async up(q: MigrationQueries): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS agent_turn_usage (
      id uuid PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
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
    )`);
    await q.query('CREATE INDEX IF NOT EXISTS agent_turn_usage_rib_seq ON agent_turn_usage (rib_id, seq)');
    await q.query('CREATE INDEX IF NOT EXISTS agent_turn_usage_run ON agent_turn_usage (run_id) WHERE run_id IS NOT NULL');
    await q.query(`CREATE TABLE IF NOT EXISTS agent_sessions (
      id text PRIMARY KEY,
      provider_id text NOT NULL,
      model text NOT NULL,
      rib_id text,
      messages jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
  }

  async down(q: MigrationQueries): Promise<void> {
    await q.query('DROP TABLE IF EXISTS agent_sessions');
    await q.query('DROP TABLE IF EXISTS agent_turn_usage');
  }
}
