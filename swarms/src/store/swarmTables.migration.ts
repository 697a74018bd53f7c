import { orderedEntityKey, sqlMigration } from '@keelson/platform';

/**
 * The swarm domain's tables: one row per swarm (its launch input with the evidence verbatim, the bus
 * channel, a projection of the workflow's state for reads) and one per agent turn (the lease and the
 * settled result that make a turn run once). Run by the swarms subgraph and by workers
 * (`swarms_migrations`); {@link SwarmStore} is the only writer.
 */
export const SwarmTables1764460800600 = sqlMigration('SwarmTables1764460800600', {
  up: [
    `CREATE TABLE swarms (
      ${orderedEntityKey},
      op_id uuid NOT NULL,
      task text NOT NULL,
      input jsonb NOT NULL,
      project_id uuid,
      status text NOT NULL DEFAULT 'RUNNING',
      bus_mode text NOT NULL,
      bus_url text NOT NULL,
      workspace_id text,
      channel_id text,
      channel_name text,
      web_url text,
      agents jsonb NOT NULL DEFAULT '[]'::jsonb,
      turns_used int NOT NULL DEFAULT 0,
      conclusion text,
      error text,
      event_seq int NOT NULL DEFAULT 0,
      temporal_workflow_id text NOT NULL UNIQUE,
      started_at timestamptz NOT NULL DEFAULT now(),
      ended_at timestamptz
    )`,
    'CREATE INDEX swarms_status_seq ON swarms (status, seq)',
    `CREATE TABLE swarm_turns (
      id text PRIMARY KEY,
      swarm_id uuid NOT NULL REFERENCES swarms(id),
      agent_id text NOT NULL,
      turn_no int NOT NULL,
      lease_owner text,
      lease_until timestamptz,
      attempts int NOT NULL DEFAULT 0,
      result jsonb,
      started_at timestamptz NOT NULL DEFAULT now(),
      completed_at timestamptz
    )`,
  ],
  down: [
    'DROP TABLE swarm_turns',
    'DROP TABLE swarms',
  ],
});
