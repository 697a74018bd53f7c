import { AuditLog } from '@keelson/platform';
import { serveDomain, type SubgraphStartOptions } from '@keelson/kit';
import { singleCapabilityWatcher } from '@keelson/operator';
import type { ProjectsApi } from '@keelson/runs';
import { serviceIdentity } from '@keelson/service';
import { openSwarmsDomain, type BusAccess, type SwarmsServices, type SwarmsSettings } from '@keelson/swarms';
import { connectClient, temporalSwarmsExecutor } from '@keelson/temporal';
import type { Client } from '@temporalio/client';
import { buildSwarmsSchema } from './schema';

export { buildSwarmsSchema } from './schema';
export { loadSwarmsConfig, swarmsSettings } from './config';
export type { SwarmsConfig } from './config';

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

/** A Temporal client connected on first use (the subgraph may start before Temporal answers). */
function lazyTemporal(target: SwarmsSettings['temporal']): { client(): Promise<Client>; close(): Promise<void> } {
  let client: Promise<Client> | undefined;
  return {
    client() {
      client ??= connectClient({ address: target.address, namespace: target.namespace }).catch((err: unknown) => {
        client = undefined;
        throw err;
      });
      return client;
    },
    async close() {
      const c = await client?.catch(() => undefined);
      await c?.connection.close();
    },
  };
}

/** Boots the swarms subgraph: the swarms domain (its tables migrated) over Temporal, served over GraphQL. */
export async function startSwarmsSubgraph(opts: StartSwarmsOptions): Promise<RunningSwarms> {
  const temporal = lazyTemporal(opts.settings.temporal);
  const domain = await openSwarmsDomain({
    databaseUrl: opts.databaseUrl,
    settings: opts.settings,
    executor: temporalSwarmsExecutor(() => temporal.client(), opts.settings.temporal),
    ...(opts.projects ? { projects: opts.projects } : {}),
    identity: serviceIdentity(opts.security.assertions, 'swarms'),
    pg: opts.security.pg,
    log: opts.log,
  }).catch(async (err: unknown) => {
    await temporal.close();
    throw err;
  });
  const closeAll = async () => {
    await temporal.close();
    await domain.close();
  };
  try {
    const { services } = domain;
    const { bus } = services;
    opts.log.info({ mode: opts.settings.bus.mode, ...(opts.settings.bus.mode === 'UNAVAILABLE' ? { reason: opts.settings.bus.reason } : { url: opts.settings.bus.url }) }, 'swarm bus');
    // capabilitiesChanged: the bus as swarmServer answers it, compared here.
    const watcher = singleCapabilityWatcher({
      dataSource: services.dataSource,
      events: services.events,
      source: 'SWARM_BUS',
      id: 'bus',
      intervalMs: opts.capabilityPollMs,
      log: opts.log,
      observe: async () => {
        const now = await services.server.status();
        return { available: now.running, state: { mode: now.mode, running: now.running }, reason: now.reason };
      },
    });
    const { schema } = await buildSwarmsSchema();
    const served = await serveDomain('swarms', { ...opts, audit: new AuditLog(services.dataSource, opts.log, 'swarms') }, schema, services, async () => {
      await watcher.stop();
      if (bus.managed && (await services.store.countRunning().catch(() => 1)) === 0) await bus.managed.stop().catch((err: unknown) => opts.log.warn({ err }, 'stopping the managed ClickClack failed'));
      await closeAll();
    });
    watcher.start();
    return { url: served.url, wsUrl: served.wsUrl, services, bus, stop: served.stop };
  } catch (err) {
    await closeAll();
    throw err;
  }
}
