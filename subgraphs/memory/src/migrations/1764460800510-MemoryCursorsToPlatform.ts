import { moveCursorsToPlatform, restoreCursorsFromPlatform } from '@keelson/platform';
import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Capture cursors move into the platform's one cursor table (`event_consumer_cursors`), positions kept. */
export class MemoryCursorsToPlatform1764460800510 implements MigrationInterface {
  name = 'MemoryCursorsToPlatform1764460800510';

  async up(q: QueryRunner): Promise<void> {
    await moveCursorsToPlatform(q, 'memory_capture_cursors');
  }

  async down(q: QueryRunner): Promise<void> {
    await restoreCursorsFromPlatform(q, 'memory_capture_cursors', 'memory-%', { positionDefault: true });
  }
}
