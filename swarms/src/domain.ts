import { IdempotencyKeys, openDomainState, type EventLog } from '@keelson/platform';
import { OpStore, projectsGraphqlApi, type ProjectsApi } from '@keelson/runs';
import type { Logger, PgTimeouts, ServiceIdentity } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { BusAccess } from './engine/busAccess';
import type { SwarmsExecutor } from './executor';
import { ServerService } from './service/server.service';
import { SwarmService } from './service/swarm.service';
import type { SwarmsSettings } from './settings';
import { swarmMigrations, SWARM_MIGRATIONS_TABLE } from './store/migrations';
import { SwarmStore } from './store/swarmStore';

/** The swarms domain's services, for its GraphQL face. */
export interface SwarmsServices {
  swarms: SwarmService;
  server: ServerService;
  /** The swarm rows and their events (the only writer of the swarm tables). */
  store: SwarmStore;
  /** The bus as this process reaches it (the managed server, when it runs one). */
  bus: BusAccess;
  events: EventLog;
  /** startSwarm's and postToSwarm's idempotency keys. */
  idempotency: IdempotencyKeys;
  dataSource: DataSource;
}

export interface OpenSwarmsDomainOptions {
  databaseUrl: string;
  settings: SwarmsSettings;
  /** Where swarms run (`@keelson/temporal`'s `temporalSwarmsExecutor`). */
  executor: SwarmsExecutor;
  /** @default the projects subgraph at settings.projectsUrl, over GraphQL, as `identity` */
  projects?: ProjectsApi;
  /** Who this process is to the projects subgraph. */
  identity: ServiceIdentity;
  /** Session bounds of the pool's connections. */
  pg?: PgTimeouts;
  log: Logger;
}

/** The swarms domain, opened. */
export interface OpenedSwarmsDomain {
  services: SwarmsServices;
  /** Closes the database (the executor is its opener's to close; a managed bus outlives this). */
  close(): Promise<void>;
}

/**
 * Opens the swarms domain: migrate the swarm tables (under the database-wide migration lock), then
 * build the store, the bus access and the services over the given executor.
 */
export async function openSwarmsDomain(opts: OpenSwarmsDomainOptions): Promise<OpenedSwarmsDomain> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: [],
    migrations: swarmMigrations,
    migrationsTableName: SWARM_MIGRATIONS_TABLE,
    log: opts.log,
    ...(opts.pg ? { pg: opts.pg } : {}),
    listenerName: 'keelson-swarms-listener',
  });
  const { dataSource, events } = state;
  const store = new SwarmStore(dataSource, events);
  const bus = new BusAccess(opts.settings.bus, opts.settings.env);
  const projects = opts.projects ?? projectsGraphqlApi(opts.settings.projectsUrl, { identity: opts.identity });
  const swarms = new SwarmService({ store, ops: new OpStore(dataSource, events), bus, executor: opts.executor, projects, settings: opts.settings, log: opts.log });
  return {
    services: { swarms, server: new ServerService(bus, store), store, bus, events, idempotency: new IdempotencyKeys(dataSource), dataSource },
    close: () => state.close(),
  };
}
