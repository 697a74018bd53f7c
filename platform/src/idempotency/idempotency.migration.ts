import { sqlMigration } from '../data/sqlMigration';

/**
 * Idempotency keys of the create/start mutations, shared by every subgraph (one row per caller
 * subject, mutation and key). Idempotent, because every subgraph's migration list includes it.
 */
export const IdempotencyKeys1764460800002 = sqlMigration('IdempotencyKeys1764460800002', {
  up: [
    `CREATE TABLE IF NOT EXISTS idempotency_keys (
      subject text NOT NULL,
      mutation text NOT NULL,
      key text NOT NULL,
      input_hash text NOT NULL,
      result jsonb,
      claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      completed_at timestamptz,
      PRIMARY KEY (subject, mutation, key)
    )`,
  ],
  down: [
    // Shared by every subgraph: never dropped by one of them.
  ],
});
