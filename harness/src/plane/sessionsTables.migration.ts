import { sqlMigration } from '@keelson/platform';

/**
 * The harness control plane's tables (run by the sessions subgraph, `sessions_migrations`):
 * sessions the mesh knows (started, adopted or spawned by a task) with their per-session event
 * sequence and the in-flight turn's lease; durable aliases (rotation); approval requests; tasks.
 * {@link HarnessStore} is the only writer.
 */
export const SessionsTables1764460800400 = sqlMigration('SessionsTables1764460800400', {
  up: [
    `CREATE TABLE harness_sessions (
      id text PRIMARY KEY,
      harness_id text NOT NULL,
      native_id text NOT NULL,
      project_id uuid,
      workspace_id uuid,
      cwd text,
      title text,
      origin text NOT NULL,
      status text NOT NULL DEFAULT 'idle',
      task_id uuid,
      successor_id text,
      event_seq bigint NOT NULL DEFAULT 0,
      announced_entries int NOT NULL DEFAULT 0,
      turns int NOT NULL DEFAULT 0,
      turn_id uuid,
      turn_holder text,
      turn_pgid int,
      turn_host text,
      turn_started_at timestamptz,
      turn_expires_at timestamptz,
      interrupt_requested boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    'CREATE INDEX harness_sessions_harness_updated ON harness_sessions (harness_id, updated_at DESC)',
    'CREATE INDEX harness_sessions_project ON harness_sessions (project_id)',
    `CREATE TABLE harness_session_aliases (
      alias text PRIMARY KEY,
      session_id text NOT NULL,
      kind text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )`,
    'CREATE INDEX harness_session_aliases_session ON harness_session_aliases (session_id)',
    `CREATE TABLE harness_approvals (
      session_id text NOT NULL,
      request_id text NOT NULL,
      turn_id uuid,
      tool_name text NOT NULL,
      tool_input jsonb,
      status text NOT NULL DEFAULT 'pending',
      created_at timestamptz NOT NULL DEFAULT now(),
      resolved_at timestamptz,
      PRIMARY KEY (session_id, request_id)
    )`,
    `CREATE TABLE harness_tasks (
      id uuid PRIMARY KEY,
      harness_id text NOT NULL,
      prompt text NOT NULL,
      project_id uuid,
      cwd text NOT NULL,
      session_id text,
      status text NOT NULL,
      result text,
      error text,
      workflow_id text NOT NULL UNIQUE,
      run_id text,
      lease_holder text,
      lease_expires_at timestamptz,
      attempts int NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz
    )`,
    'CREATE INDEX harness_tasks_session ON harness_tasks (session_id)',
  ],
  down: [
    'DROP TABLE IF EXISTS harness_tasks',
    'DROP TABLE IF EXISTS harness_approvals',
    'DROP TABLE IF EXISTS harness_session_aliases',
    'DROP TABLE IF EXISTS harness_sessions',
  ],
});

/** Questions a CLI asked the user (seed 002's prompts), answered with `answerPrompt`. */
export const HarnessPrompts1764460800620 = sqlMigration('HarnessPrompts1764460800620', {
  up: [
    `CREATE TABLE harness_prompts (
      session_id text NOT NULL,
      prompt_id text NOT NULL,
      turn_id uuid,
      question text NOT NULL,
      header text,
      options jsonb NOT NULL DEFAULT '[]',
      multi_select boolean NOT NULL DEFAULT false,
      status text NOT NULL DEFAULT 'pending',
      answer text,
      created_at timestamptz NOT NULL DEFAULT now(),
      answered_at timestamptz,
      PRIMARY KEY (session_id, prompt_id)
    )`,
  ],
  down: ['DROP TABLE IF EXISTS harness_prompts'],
});

/** A session's default model and reasoning effort (startSession's `model` / `effort`; seed 002's drivers table). */
export const SessionModelEffort1764460800610 = sqlMigration('SessionModelEffort1764460800610', {
  up: ['ALTER TABLE harness_sessions ADD COLUMN model text', 'ALTER TABLE harness_sessions ADD COLUMN effort text'],
  down: ['ALTER TABLE harness_sessions DROP COLUMN effort', 'ALTER TABLE harness_sessions DROP COLUMN model'],
});
