import { moveCursorsToPlatform, restoreCursorsFromPlatform } from '@keelson/platform';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The run-event router's cursors move into the platform's one cursor table, positions kept. */
export class RibCursorsToPlatform1764460800220 implements MigrationInterface {
  name = 'RibCursorsToPlatform1764460800220';

  async up(q: QueryRunner): Promise<void> {
    await moveCursorsToPlatform(q, 'rib_stream_cursors');
  }

  async down(q: QueryRunner): Promise<void> {
    await restoreCursorsFromPlatform(q, 'rib_stream_cursors', 'rib-run-events:%');
  }
}
