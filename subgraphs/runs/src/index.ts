import { IdempotencyKeys, openDomainState } from '@keelson/platform';
import { startSubgraph } from '@keelson/kit';
import { serviceIdentity, type Logger, type MeshSecurity, type PgTimeouts, type ServiceIdentity } from '@keelson/service';
import { CatalogService, OpStore, projectsGraphqlApi, RUNS_MIGRATIONS_TABLE, RunStore, runsMigrations, WorkflowCatalog, type ProjectsApi } from '@keelson/runs';
import { connectClient } from '@keelson/temporal';
import { join } from 'node:path';
import type { RunsContext, RunsServices } from './context';
import { Op } from './op/op.entity';
import { OpService } from './op/op.service';
import { Run } from './run/run.entity';
import { RunService } from './run/run.service';
import { RunNode } from './run/runNode.entity';
import { RunPause } from './run/runPause.entity';
import { buildRunsSchema } from './schema';
import type { RunsSettings } from './settings';

export { buildRunsSchema } from './schema';
export { loadRunsConfig, runsSettings } from './config';
export type { RunsConfig } from './config';
export type { RunsSettings } from './settings';
export type { RunsServices } from './context';
export { resolveInputs } from './run/run.service';
export type { StartWorkflowArgs } from './run/run.service';
export type { StartOpArgs } from './op/op.service';

export const runsEntities = [Run, RunNode, RunPause, Op];

export interface OpenRunsOptions {
  databaseUrl: string;
  settings: RunsSettings;
  /** @default the projects subgraph at settings.projectsUrl, over GraphQL, as `identity` */
  projects?: ProjectsApi;
  /** Who this process is to the projects subgraph. */
  identity: ServiceIdentity;
  /** Session bounds of the pool's connections. */
  pg?: PgTimeouts;
  log: Logger;
}

export interface StartRunsOptions extends Omit<OpenRunsOptions, 'identity' | 'pg'> {
  host: string;
  /** 0 picks a free port. */
  port: number;
  /** Authentication (the gateway's assertion key), allowlists, limits and Postgres bounds. */
  security: MeshSecurity;
}

/** The runs domain without its GraphQL server (the ribs process's run seams reach it in-process). */
export interface OpenedRuns {
  services: RunsServices;
  /** SQL statements sent so far. */
  queryCount(): number;
  /** Closes the Temporal connection and the database. */
  close(): Promise<void>;
}

export interface RunningRuns {
  url: string;
  wsUrl: string;
  /** The domain services, for in-process callers (the rib host's run seams) and tests. */
  services: RunsServices;
  /** SQL statements sent so far. */
  queryCount(): number;
  stop(): Promise<void>;
}

/**
 * Opens the runs domain's services: migrate (under the database-wide migration lock, so another
 * process opening it at the same time is safe), connect to Temporal, build the catalog and services.
 */
export async function openRunsServices(opts: OpenRunsOptions): Promise<OpenedRuns> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: runsEntities,
    migrations: runsMigrations,
    migrationsTableName: RUNS_MIGRATIONS_TABLE,
    log: opts.log,
    ...(opts.pg ? { pg: opts.pg } : {}),
  });
  const { dataSource, queries, events } = state;
  let temporal: Awaited<ReturnType<typeof connectClient>> | undefined;
  try {
    temporal = await connectClient({ address: opts.settings.temporal.address, namespace: opts.settings.temporal.namespace });
    const projects = opts.projects ?? projectsGraphqlApi(opts.settings.projectsUrl, { identity: opts.identity });
    const catalog = new CatalogService(
      new WorkflowCatalog({
        bundledDir: opts.settings.bundledWorkflowsDir,
        globalDir: join(opts.settings.keelsonHome, 'workflows'),
        ribs: opts.settings.ribWorkflows,
      }),
      projects,
    );
    const runs = new RunService({
      dataSource,
      store: new RunStore(dataSource, events),
      events,
      catalog,
      projects,
      temporal,
      settings: opts.settings,
      log: opts.log,
    });
    const ops = new OpService({ dataSource, store: new OpStore(dataSource, events), temporal, settings: opts.settings });
    const client = temporal;
    return {
      services: { runs, ops, catalog, events, idempotency: new IdempotencyKeys(dataSource), settings: opts.settings, dataSource },
      queryCount: () => queries.count,
      close: async () => {
        await client.connection.close();
        await state.close();
      },
    };
  } catch (err) {
    await temporal?.connection.close();
    await state.close();
    throw err;
  }
}

/** Boots the runs subgraph: open the domain (migrate, connect to Temporal), then serve. */
export async function start(opts: StartRunsOptions): Promise<RunningRuns> {
  const opened = await openRunsServices({ ...opts, identity: serviceIdentity(opts.security.assertions, 'runs'), pg: opts.security.pg });
  try {
    const { services } = opened;
    const { schema } = await buildRunsSchema();
    const served = await startSubgraph<RunsContext>({
      name: 'runs',
      schema,
      host: opts.host,
      port: opts.port,
      security: opts.security,
      log: opts.log,
      context: (base) => ({ ...base, services }),
      onStop: opened.close,
    });
    return { url: served.url, wsUrl: served.wsUrl, services, queryCount: opened.queryCount, stop: served.stop };
  } catch (err) {
    await opened.close();
    throw err;
  }
}
