import { createDataSource, EventLog, EventNotifier, initializeAndMigrate } from '@keelson/platform';
import { OperatorApprovals1764460800600 } from '@keelson/operator';
import type { Logger, PgTimeouts, ServiceIdentity } from '@keelson/service';
import type { DataSource } from 'typeorm';
import type { CliDriver } from './drivers/cliDriver';
import type { HarnessId } from './ids';
import { HarnessControlPlane } from './plane/controlPlane';
import { harnessProjectsGraphqlApi, type HarnessProjectsApi } from './plane/projects';
import { HarnessPrompts1764460800620, SessionModelEffort1764460800610, SessionsTables1764460800400 } from './plane/sessionsTables.migration';
import { HarnessStore } from './plane/store';
import { createDriverRegistry } from './registry';
import type { HarnessSettings } from './settings';

/** The control plane's migrations (the sessions subgraph's history, `sessions_migrations`). */
export const sessionsMigrations = [SessionsTables1764460800400, OperatorApprovals1764460800600, SessionModelEffort1764460800610, HarnessPrompts1764460800620];
export const SESSIONS_MIGRATIONS_TABLE = 'sessions_migrations';

export interface HarnessRuntimeOptions {
  databaseUrl: string;
  settings: HarnessSettings;
  /** The projects subgraph's GraphQL URL (where turns may run) and who the sessions service is to it, or an API (tests). */
  projects: { url: string; identity: ServiceIdentity } | HarnessProjectsApi;
  log: Logger;
  /** Replaces drivers (tests). */
  drivers?: Partial<Record<HarnessId, CliDriver>>;
  /** application_name of the LISTEN connection. @default keelson-sessions-listener */
  listenerName?: string;
  /** Session bounds of the pool's connections. */
  pg?: PgTimeouts;
}

export interface HarnessRuntime {
  plane: HarnessControlPlane;
  dataSource: DataSource;
  events: EventLog;
  notifier: EventNotifier;
  /** Kills this process's turns, then closes the listener and the pool. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The harness control plane of one process (the sessions subgraph, or a worker running
 * `harnessTask`): its own pool and LISTEN connection on the shared database, migrations applied.
 */
export async function startHarnessRuntime(opts: HarnessRuntimeOptions): Promise<HarnessRuntime> {
  if (opts.settings.sandbox.mode === 'off') {
    opts.log.warn('KEELSON_SANDBOX=off: harness CLIs run without bubblewrap — the whole filesystem writable by their tools, with this user\'s access');
  }
  const { dataSource } = createDataSource({
    url: opts.databaseUrl,
    entities: [],
    migrations: sessionsMigrations,
    migrationsTableName: SESSIONS_MIGRATIONS_TABLE,
    log: opts.log,
    ...(opts.pg ? { pg: opts.pg } : {}),
  });
  await initializeAndMigrate(dataSource);
  const notifier = new EventNotifier({ url: opts.databaseUrl, log: opts.log, applicationName: opts.listenerName ?? 'keelson-sessions-listener' });
  try {
    await notifier.ready();
  } catch (err) {
    await dataSource.destroy();
    throw err;
  }
  const events = new EventLog(dataSource, notifier);
  const plane = new HarnessControlPlane({
    store: new HarnessStore(dataSource, events),
    drivers: createDriverRegistry(opts.settings, opts.drivers),
    projects: 'url' in opts.projects ? harnessProjectsGraphqlApi(opts.projects.url, { identity: opts.projects.identity }) : opts.projects,
    settings: opts.settings,
    dataSource,
    notifier,
    log: opts.log,
  });
  let stopping: Promise<void> | undefined;
  return {
    plane,
    dataSource,
    events,
    notifier,
    stop: () =>
      (stopping ??= (async () => {
        await plane.stop();
        await notifier.stop();
        await dataSource.destroy();
      })()),
  };
}
