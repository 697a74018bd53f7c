/** What a migration's statements run on: TypeORM's QueryRunner, or a pg Pool or Client in a test. */
export interface SqlRunner {
  query(sql: string): Promise<unknown>;
}

/** A migration TypeORM can build (`new`) and run: it reads the timestamp off the end of `name`. */
export type SqlMigration = new () => {
  readonly name: string;
  up(q: SqlRunner): Promise<void>;
  down(q: SqlRunner): Promise<void>;
};

/**
 * A migration made of SQL statements, run one after another in the migration's transaction.
 * `name` is the one recorded in the service's migrations table (class name + timestamp), so it never
 * changes once shipped; neither do the statements. `down: []` is a migration never undone (the
 * shared, idempotent ones every list includes).
 */
export function sqlMigration(name: string, statements: { up: readonly string[]; down: readonly string[] }): SqlMigration {
  const run = async (q: SqlRunner, sqls: readonly string[]) => {
    for (const sql of sqls) await q.query(sql);
  };
  const migration = class {
    readonly name = name;
    up(q: SqlRunner): Promise<void> {
      return run(q, statements.up);
    }
    down(q: SqlRunner): Promise<void> {
      return run(q, statements.down);
    }
  };
  // Named like the class it replaces, for stack traces and TypeORM's log.
  Object.defineProperty(migration, 'name', { value: name });
  return migration;
}

/**
 * The key columns of an entity listed in one global order (runs, ops, swarms, the usage ledger): its
 * id, and a `seq` Postgres hands out as rows arrive, which lists page by (keyset, `seq` last in their
 * indexes). For a CREATE TABLE's first columns.
 */
export const orderedEntityKey = `id uuid PRIMARY KEY,
      seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE`;
