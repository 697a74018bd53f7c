import { sqlMigration } from '../data/sqlMigration';
import { IdempotencyKeys1764460800002 } from '../idempotency/idempotency.migration';
import { cursorTableSql } from './cursorTables';

/**
 * The event log shared by every subgraph: `events` is the truth of every stream; `event_streams`
 * holds each stream's last sequence, whose row lock makes sequences commit in order.
 * Idempotent, because every subgraph's migration list includes it.
 */
export const EventLogTables1764460800000 = sqlMigration('EventLogTables1764460800000', {
  up: [
    `CREATE TABLE IF NOT EXISTS event_streams (
      stream text PRIMARY KEY,
      last_seq bigint NOT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS events (
      stream text NOT NULL,
      seq bigint NOT NULL,
      key text NOT NULL,
      type text NOT NULL,
      payload jsonb NOT NULL DEFAULT '{}'::jsonb,
      at timestamptz NOT NULL DEFAULT clock_timestamp(),
      PRIMARY KEY (stream, seq)
    )`,
    'CREATE INDEX IF NOT EXISTS events_stream_key_seq ON events (stream, key, seq)',
  ],
  down: [
    // Shared by every subgraph: never dropped by one of them.
  ],
});

/**
 * Every event records its actor (`{ subject, kind }` of the caller whose request wrote it; null for
 * the mesh's own work). Idempotent, like the tables: every subgraph's migration list includes it.
 */
export const EventLogActor1764460800001 = sqlMigration('EventLogActor1764460800001', {
  up: ['ALTER TABLE events ADD COLUMN IF NOT EXISTS actor jsonb'],
  down: [
    // Shared by every subgraph: never dropped by one of them.
  ],
});

/**
 * One cursor table for every durable consumer of the log (memory capture, the ribs' run-event
 * router, …): a consumer's position in its stream, advanced in the transaction of what it wrote.
 * Idempotent, like the tables: every subgraph's migration list includes it.
 */
export const EventConsumerCursors1764460800003 = sqlMigration('EventConsumerCursors1764460800003', {
  up: [cursorTableSql('event_consumer_cursors', { ifNotExists: true, positionDefault: true })],
  down: [
    // Shared by every subgraph: never dropped by one of them.
  ],
});

/** The platform's own migrations, run first in every service's list (each one idempotent). */
export const platformMigrations = [EventLogTables1764460800000, EventLogActor1764460800001, IdempotencyKeys1764460800002, EventConsumerCursors1764460800003];
