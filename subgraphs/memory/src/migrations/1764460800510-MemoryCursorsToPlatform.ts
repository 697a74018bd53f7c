import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Capture cursors move into the platform's one cursor table (`event_consumer_cursors`), positions kept. */
export class MemoryCursorsToPlatform1764460800510 implements MigrationInterface {
  name = 'MemoryCursorsToPlatform1764460800510';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`INSERT INTO event_consumer_cursors (consumer, stream, position, updated_at)
      SELECT consumer, stream, position, updated_at FROM memory_capture_cursors
      ON CONFLICT (consumer) DO UPDATE SET position = greatest(event_consumer_cursors.position, excluded.position)`);
    await q.query('DROP TABLE memory_capture_cursors');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE memory_capture_cursors (
      consumer text PRIMARY KEY,
      stream text NOT NULL,
      position bigint NOT NULL DEFAULT 0,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`INSERT INTO memory_capture_cursors SELECT consumer, stream, position, updated_at FROM event_consumer_cursors WHERE consumer LIKE 'memory-%'`);
  }
}
