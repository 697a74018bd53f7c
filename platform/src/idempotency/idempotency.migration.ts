import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency keys of the create/start mutations, shared by every subgraph (one row per caller
 * subject, mutation and key). Idempotent, because every subgraph's migration list includes it.
 */
export class IdempotencyKeys1764460800002 implements MigrationInterface {
  name = 'IdempotencyKeys1764460800002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS idempotency_keys (
      subject text NOT NULL,
      mutation text NOT NULL,
      key text NOT NULL,
      input_hash text NOT NULL,
      result jsonb,
      claimed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
      completed_at timestamptz,
      PRIMARY KEY (subject, mutation, key)
    )`);
  }

  async down(): Promise<void> {
    // Shared by every subgraph: never dropped by one of them.
  }
}
