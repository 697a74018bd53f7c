import { sqlMigration } from '@keelson/platform';

/**
 * The ribs subgraph's tables: snapshot heads (the current version of each key, whose row lock
 * orders concurrent appends), the retained snapshot versions (each with the `snapshots` event that
 * announced it), and rib credentials encrypted at rest.
 */
export const RibsTables1764460800200 = sqlMigration('RibsTables1764460800200', {
  up: [
    `CREATE TABLE rib_snapshot_heads (
      key text PRIMARY KEY,
      rib_id text NOT NULL,
      version integer NOT NULL
    )`,
    `CREATE TABLE rib_snapshot_versions (
      key text NOT NULL,
      version integer NOT NULL,
      rib_id text NOT NULL,
      payload jsonb NOT NULL,
      composed_at timestamptz NOT NULL,
      event_seq bigint NOT NULL,
      PRIMARY KEY (key, version)
    )`,
    `CREATE TABLE rib_credentials (
      account text PRIMARY KEY,
      ciphertext bytea NOT NULL,
      iv bytea NOT NULL,
      auth_tag bytea NOT NULL,
      key_id text NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
  ],
  down: [
    'DROP TABLE rib_credentials',
    'DROP TABLE rib_snapshot_versions',
    'DROP TABLE rib_snapshot_heads',
  ],
});
