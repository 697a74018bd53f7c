import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The run-event router's cursors move into the platform's one cursor table, positions kept. */
export class RibCursorsToPlatform1764460800220 implements MigrationInterface {
  name = 'RibCursorsToPlatform1764460800220';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`INSERT INTO event_consumer_cursors (consumer, stream, position, updated_at)
      SELECT consumer, stream, position, updated_at FROM rib_stream_cursors
      ON CONFLICT (consumer) DO UPDATE SET position = greatest(event_consumer_cursors.position, excluded.position)`);
    await q.query('DROP TABLE rib_stream_cursors');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE rib_stream_cursors (
      consumer text PRIMARY KEY,
      stream text NOT NULL,
      position bigint NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
    await q.query(`INSERT INTO rib_stream_cursors SELECT consumer, stream, position, updated_at FROM event_consumer_cursors WHERE consumer LIKE 'rib-run-events:%'`);
  }
}
