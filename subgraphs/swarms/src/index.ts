import { IdempotencyKeys, openDomainState, AuditLog } from '@keelson/platform';
import { serveDomain, type SubgraphStartOptions } from '@keelson/kit';
import { singleCapabilityWatcher } from '@keelson/operator';
import { BusAccess, SwarmStore } from '@keelson/rib-swarm';
import { serviceIdentity } from '@keelson/service';
import { OpStore, projectsGraphqlApi, type ProjectsApi } from '@keelson/runs';
import { connectClient, swarmMigrations, SWARM_MIGRATIONS_TABLE } from '@keelson/temporal';
import type { Client } from '@temporalio/client';
import type { SwarmsServices } from './context';
import { buildSwarmsSchema } from './schema';
import { ServerService } from './server/server.service';
import type { SwarmsSettings } from './settings';
import { SwarmService } from './swarm/swarm.service';

export { buildSwarmsSchema } from './schema';
export { loadSwarmsConfig, swarmsSettings } from './config';
export type { SwarmsConfig } from './config';
export type { SwarmsSettings } from './settings';
export type { SwarmsServices } from './context';
export type { ServerView } from './server/server.service';

export interface StartSwarmsOptions extends SubgraphStartOptions {
  settings: SwarmsSettings;
  /** Replaces the projects subgraph's API (tests). */
  projects?: ProjectsApi;
  /** How often the bus is compared for capabilitiesChanged. @default 10000 */
  capabilityPollMs?: number;
}

export interface RunningSwarms {
  url: string;
  wsUrl: string;
  services: SwarmsServices;
  /** The bus as this process reaches it (the managed server, when it runs one). */
  bus: BusAccess;
  /** Stops serving; a managed bus is stopped too when no swarm runs on it (else the next start adopts it). */
  stop(): Promise<void>;
}

/** Boots the swarms subgraph: migrate the swarm tables, then serve (the swarms domain over GraphQL). */
export async function startSwarmsSubgraph(opts: StartSwarmsOptions): Promise<RunningSwarms> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: [],
    migrations: swarmMigrations,
    migrationsTableName: SWARM_MIGRATIONS_TABLE,
    log: opts.log,
    pg: opts.security.pg,
    listenerName: 'keelson-swarms-listener',
  });
  const { dataSource, events } = state;
  const store = new SwarmStore(dataSource, events);
  const bus = new BusAccess(opts.settings.bus, opts.settings.env);
  let client: Promise<Client> | undefined;
  const temporal = () => {
    client ??= connectClient({ address: opts.settings.temporal.address, namespace: opts.settings.temporal.namespace }).catch((err: unknown) => {
      client = undefined;
      throw err;
    });
    return client;
  };
  const closeAll = async () => {
    const c = await client?.catch(() => undefined);
    await c?.connection.close();
    await state.close();
  };
  try {
    const services: SwarmsServices = {
      swarms: new SwarmService({
        store,
        ops: new OpStore(dataSource, events),
        bus,
        temporal,
        projects: opts.projects ?? projectsGraphqlApi(opts.settings.projectsUrl, { identity: serviceIdentity(opts.security.assertions, 'swarms') }),
        settings: opts.settings,
        log: opts.log,
      }),
      server: new ServerService(bus, store),
      events,
      idempotency: new IdempotencyKeys(dataSource),
    };
    opts.log.info({ mode: opts.settings.bus.mode, ...(opts.settings.bus.mode === 'UNAVAILABLE' ? { reason: opts.settings.bus.reason } : { url: opts.settings.bus.url }) }, 'swarm bus');
    // capabilitiesChanged: the bus as swarmServer answers it, compared here.
    const server = services.server;
    const watcher = singleCapabilityWatcher({
      dataSource,
      events,
      source: 'SWARM_BUS',
      id: 'bus',
      intervalMs: opts.capabilityPollMs,
      log: opts.log,
      observe: async () => {
        const now = await server.status();
        return { available: now.running, state: { mode: now.mode, running: now.running }, reason: now.reason };
      },
    });
    const { schema } = await buildSwarmsSchema();
    const served = await serveDomain('swarms', { ...opts, audit: new AuditLog(dataSource, opts.log, 'swarms') }, schema, services, async () => {
      await watcher.stop();
      if (bus.managed && (await store.countRunning().catch(() => 1)) === 0) await bus.managed.stop().catch((err: unknown) => opts.log.warn({ err }, 'stopping the managed ClickClack failed'));
      await closeAll();
    });
    watcher.start();
    return { url: served.url, wsUrl: served.wsUrl, services, bus, stop: served.stop };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
