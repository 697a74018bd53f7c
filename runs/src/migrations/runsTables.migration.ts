import { orderedEntityKey, sqlMigration } from '@keelson/platform';

/**
 * The runs subgraph's tables: runs, their launches, nodes and approval pauses; ops and their steers.
 * The runs subgraph runs this migration (`runs_migrations`); {@link RunStore} and {@link OpStore}
 * are the only writers, the subgraph's entities read them.
 */
export const RunsTables1764460800300 = sqlMigration('RunsTables1764460800300', {
  up: [
    `CREATE TABLE runs (
      ${orderedEntityKey},
      workflow_name text NOT NULL,
      title text NOT NULL,
      definition jsonb NOT NULL,
      scope text NOT NULL,
      inputs jsonb NOT NULL DEFAULT '{}'::jsonb,
      project_id uuid,
      project_name text,
      rib_id text,
      started_by_rib_id text,
      status text NOT NULL,
      error text,
      cwd text NOT NULL,
      artifacts_dir text NOT NULL,
      checkout jsonb,
      temporal_workflow_id text NOT NULL UNIQUE,
      launch int NOT NULL DEFAULT 1,
      started_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz
    )`,
    'CREATE INDEX runs_status_seq ON runs (status, seq)',
    'CREATE INDEX runs_workflow_seq ON runs (workflow_name, seq)',
    'CREATE INDEX runs_project_seq ON runs (project_id, seq)',
    'CREATE INDEX runs_rib_seq ON runs (rib_id, seq)',
    'CREATE INDEX runs_started_by_seq ON runs (started_by_rib_id, seq)',
    `CREATE TABLE run_launches (
      run_id uuid NOT NULL REFERENCES runs(id),
      launch int NOT NULL,
      temporal_run_id text NOT NULL,
      started_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (run_id, launch)
    )`,
    `CREATE TABLE run_nodes (
      run_id uuid NOT NULL REFERENCES runs(id),
      node_id text NOT NULL,
      position int NOT NULL,
      type text NOT NULL,
      depends_on text[] NOT NULL DEFAULT '{}',
      status text NOT NULL DEFAULT 'PENDING',
      launch int,
      attempt int NOT NULL DEFAULT 0,
      failures int NOT NULL DEFAULT 0,
      output text,
      output_bytes bigint NOT NULL DEFAULT 0,
      output_truncated boolean NOT NULL DEFAULT false,
      exit_code int,
      error text,
      started_at timestamptz,
      completed_at timestamptz,
      PRIMARY KEY (run_id, node_id)
    )`,
    `CREATE TABLE run_pauses (
      pause_id text PRIMARY KEY,
      run_id uuid NOT NULL REFERENCES runs(id),
      node_id text NOT NULL,
      launch int NOT NULL,
      prompt text NOT NULL,
      artifacts jsonb NOT NULL DEFAULT '[]'::jsonb,
      opened_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      closed_at timestamptz,
      closed_by text,
      decision text,
      answered_at timestamptz
    )`,
    'CREATE INDEX run_pauses_run ON run_pauses (run_id, opened_at)',
    `CREATE TABLE ops (
      ${orderedEntityKey},
      kind text NOT NULL,
      title text,
      input jsonb NOT NULL DEFAULT 'null'::jsonb,
      status text NOT NULL,
      result jsonb,
      error text,
      rib_id text,
      project_id uuid,
      steerable boolean NOT NULL DEFAULT false,
      temporal_workflow_id text NOT NULL UNIQUE,
      began_at timestamptz,
      started_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz
    )`,
    'CREATE INDEX ops_rib_seq ON ops (rib_id, seq)',
    `CREATE TABLE op_steers (
      op_id uuid NOT NULL REFERENCES ops(id),
      idx int NOT NULL,
      note text NOT NULL,
      at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (op_id, idx)
    )`,
  ],
  down: [
    'DROP TABLE op_steers',
    'DROP TABLE ops',
    'DROP TABLE run_pauses',
    'DROP TABLE run_nodes',
    'DROP TABLE run_launches',
    'DROP TABLE runs',
  ],
});
