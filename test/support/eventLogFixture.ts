import { silentLogger, type Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { createDataSource, EventLog, EventNotifier, initializeAndMigrate, type QueryCounter } from '@keelson/platform';
import { createTestDatabase, type TestDatabase } from './db';

/** The event log's integration tests' setup: a fresh database with the platform's tables, a pool over it, a notifier and an event log. */
export interface EventLogFixture {
  db: TestDatabase;
  dataSource: DataSource;
  queries: QueryCounter;
  notifier: EventNotifier;
  events: EventLog;
  /** Stops the notifier, closes the pool and drops the database. */
  close(): Promise<void>;
}

/** Opens the fixture for one test file: `name` names its database and migrations table, `poolSize` its pool; `log` is the pool's and the notifier's. */
export async function openEventLogFixture(name: string, poolSize: number, log: Logger = silentLogger()): Promise<EventLogFixture> {
  const db = await createTestDatabase(`keelson_${name}`);
  const { dataSource, queries } = createDataSource({ url: db.url, entities: [], migrations: [], migrationsTableName: `${name}_test_migrations`, log, poolSize });
  try {
    await initializeAndMigrate(dataSource);
  } catch (err) {
    await dataSource.destroy().catch(() => undefined);
    await db.drop();
    throw err;
  }
  const notifier = new EventNotifier({ url: db.url, log });
  return {
    db,
    dataSource,
    queries,
    notifier,
    events: new EventLog(dataSource, notifier),
    async close() {
      await notifier.stop();
      await dataSource.destroy();
      await db.drop();
    },
  };
}

/** The integers from `from` to `to`, both included (none when `to < from`). */
export const range = (from: number, to: number): number[] => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
