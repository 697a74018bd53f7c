import { cursorTableSql, sqlMigration } from '@keelson/platform';

/**
 * Durable positions of the ribs subgraph's stream consumers (the `runs` stream that drives
 * `onRunEvent`): a restarted process resumes where it stopped instead of replaying or skipping.
 */
export const RibStreamCursors1764460800210 = sqlMigration('RibStreamCursors1764460800210', {
  up: [
    cursorTableSql('rib_stream_cursors'),
  ],
  down: [
    'DROP TABLE rib_stream_cursors',
  ],
});
