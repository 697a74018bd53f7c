import { moveCursorsToPlatform, restoreCursorsFromPlatform, sqlMigration } from '@keelson/platform';

/** Capture cursors move into the platform's one cursor table (`event_consumer_cursors`), positions kept. */
export const MemoryCursorsToPlatform1764460800510 = sqlMigration('MemoryCursorsToPlatform1764460800510', {
  up: moveCursorsToPlatform('memory_capture_cursors'),
  down: restoreCursorsFromPlatform('memory_capture_cursors', 'memory-%', { positionDefault: true }),
});
