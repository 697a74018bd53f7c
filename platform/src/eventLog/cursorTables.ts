/**
 * The DDL of a consumer-cursor table (a consumer's position in its stream): the platform's
 * `event_consumer_cursors`, and the per-package tables it replaced, which their migrations still
 * create and restore. The text is what those migrations have always run, byte for byte.
 */
export function cursorTableSql(table: string, opts: { ifNotExists?: boolean; positionDefault?: boolean } = {}): string {
  return `CREATE TABLE ${opts.ifNotExists ? 'IF NOT EXISTS ' : ''}${table} (
      consumer text PRIMARY KEY,
      stream text NOT NULL,
      position bigint NOT NULL${opts.positionDefault ? ' DEFAULT 0' : ''},
      updated_at timestamptz NOT NULL DEFAULT now()
    )`;
}

/** The statements that move a package's cursors into `event_consumer_cursors` (keeping the further position on a clash), then drop its table. */
export function moveCursorsToPlatform(table: string): string[] {
  return [
    `INSERT INTO event_consumer_cursors (consumer, stream, position, updated_at)
      SELECT consumer, stream, position, updated_at FROM ${table}
      ON CONFLICT (consumer) DO UPDATE SET position = greatest(event_consumer_cursors.position, excluded.position)`,
    `DROP TABLE ${table}`,
  ];
}

/** The statements undoing {@link moveCursorsToPlatform}: the package's table again, with the cursors of its consumers (`consumer LIKE pattern`). */
export function restoreCursorsFromPlatform(table: string, consumerPattern: string, opts: { positionDefault?: boolean } = {}): string[] {
  return [
    cursorTableSql(table, opts),
    `INSERT INTO ${table} SELECT consumer, stream, position, updated_at FROM event_consumer_cursors WHERE consumer LIKE '${consumerPattern}'`,
  ];
}
