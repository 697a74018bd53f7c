import { createDataSource, EventLog, EventNotifier, initializeAndMigrate } from '@keelson/platform';
import { silentLogger } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/db';
import { ribsEntities, ribsMigrations } from '../../src/index';

/** One "process" worth of the ribs subgraph's persistence: its own pool, LISTEN connection and event log. */
export interface RibsDb {
  dataSource: DataSource;
  notifier: EventNotifier;
  events: EventLog;
  close(): Promise<void>;
}

/** Opens the ribs tables (migrating them) on `url`, as a separate process would. */
export async function openRibsDb(url: string): Promise<RibsDb> {
  const log = silentLogger();
  const { dataSource } = createDataSource({ url, entities: ribsEntities, migrations: ribsMigrations, migrationsTableName: 'ribs_migrations', log });
  await initializeAndMigrate(dataSource);
  const notifier = new EventNotifier({ url, log });
  await notifier.ready();
  return {
    dataSource,
    notifier,
    events: new EventLog(dataSource, notifier),
    async close() {
      await notifier.stop();
      await dataSource.destroy();
    },
  };
}

export { createTestDatabase, type TestDatabase };
