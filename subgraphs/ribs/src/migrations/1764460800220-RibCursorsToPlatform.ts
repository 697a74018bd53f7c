import { moveCursorsToPlatform, restoreCursorsFromPlatform, sqlMigration } from '@keelson/platform';

/** The run-event router's cursors move into the platform's one cursor table, positions kept. */
export const RibCursorsToPlatform1764460800220 = sqlMigration('RibCursorsToPlatform1764460800220', {
  up: moveCursorsToPlatform('rib_stream_cursors'),
  down: restoreCursorsFromPlatform('rib_stream_cursors', 'rib-run-events:%'),
});
