import type { Logger, PgTimeouts } from '@keelson/service';
import type { EntitySchema, MixedList } from 'typeorm';
import { createDataSource, initializeAndMigrate, type MeshDataSource } from './dataSource';
import { EventLog } from '../eventLog/eventLog';
import { EventNotifier } from '../eventLog/notifier';

export interface DomainStateOptions {
  url: string;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities: MixedList<Function | string | EntitySchema>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  migrations: Function[];
  /** Each subgraph keeps its own migration history. */
  migrationsTableName: string;
  log: Logger;
  /** application_name of the LISTEN connection. @default keelson-listener */
  listenerName?: string;
  /** Session bounds of the pool's connections. @default the kit's defaults */
  pg?: PgTimeouts;
}

export interface DomainState extends MeshDataSource {
  notifier: EventNotifier;
  events: EventLog;
  /** Stops the listener, then closes the pool. */
  close(): Promise<void>;
}

/**
 * What every subgraph owns before it serves: its DataSource migrated (under the shared advisory
 * lock), and the event log with a live LISTEN connection. A failure part-way releases what opened.
 */
export async function openDomainState(opts: DomainStateOptions): Promise<DomainState> {
  const { dataSource, queries } = createDataSource({
    url: opts.url,
    entities: opts.entities,
    migrations: opts.migrations,
    migrationsTableName: opts.migrationsTableName,
    log: opts.log,
    ...(opts.pg ? { pg: opts.pg } : {}),
  });
  const notifier = new EventNotifier({ url: opts.url, log: opts.log, applicationName: opts.listenerName });
  const close = async () => {
    await notifier.stop();
    if (dataSource.isInitialized) await dataSource.destroy();
  };
  try {
    await initializeAndMigrate(dataSource);
    await notifier.ready();
  } catch (err) {
    await close();
    throw err;
  }
  return { dataSource, queries, notifier, events: new EventLog(dataSource, notifier), close };
}
