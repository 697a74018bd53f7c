import { cursorTableSql } from '@keelson/platform';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Durable positions of the ribs subgraph's stream consumers (the `runs` stream that drives
 * `onRunEvent`): a restarted process resumes where it stopped instead of replaying or skipping.
 */
export class RibStreamCursors1764460800210 implements MigrationInterface {
  name = 'RibStreamCursors1764460800210';

  async up(q: QueryRunner): Promise<void> {
    await q.query(cursorTableSql('rib_stream_cursors'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query('DROP TABLE rib_stream_cursors');
  }
}
