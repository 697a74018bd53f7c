import { sqlMigration } from '@keelson/platform';

/**
 * The approval inbox: one row per gate, whoever opened it (a run's approval node, a policy ask, a
 * harness CLI's permission request, a swarm gate). `source_key` names the gate in its owner's terms
 * (`run:<pauseId>`, `harness:<sessionId>:<requestId>`), so opening it twice is one row. `seq` orders
 * the inbox for paging. Idempotent, like the event log: the runs and the sessions migration lists
 * both include it (either may boot first; both write rows).
 */
export const OperatorApprovals1764460800600 = sqlMigration('OperatorApprovals1764460800600', {
  up: [
    `CREATE TABLE IF NOT EXISTS approvals (
      id uuid PRIMARY KEY,
      seq bigserial NOT NULL UNIQUE,
      source_key text NOT NULL UNIQUE,
      kind text NOT NULL,
      status text NOT NULL DEFAULT 'OPEN',
      question text NOT NULL,
      detail jsonb,
      run_id uuid,
      session_id text,
      swarm_id uuid,
      project_id uuid,
      opened_at timestamptz NOT NULL DEFAULT now(),
      answered_at timestamptz,
      answered_by text,
      answer text,
      decision text,
      closed_at timestamptz,
      close_reason text
    )`,
    'CREATE INDEX IF NOT EXISTS approvals_status_seq ON approvals (status, seq)',
    'CREATE INDEX IF NOT EXISTS approvals_kind_seq ON approvals (kind, seq)',
  ],
  down: [
    // Shared by the runs and sessions migration lists: never dropped by one of them.
  ],
});
