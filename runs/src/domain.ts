import { join } from 'node:path';
import { IdempotencyKeys, openDomainState, type EventLog } from '@keelson/platform';
import type { Logger, PgTimeouts, ServiceIdentity } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { CatalogService, WorkflowCatalog } from './catalog/catalog';
import type { RunsExecutor } from './executor';
import { runsMigrations, RUNS_MIGRATIONS_TABLE } from './migrations';
import { Op } from './op/op.entity';
import { OpService } from './op/op.service';
import { projectsGraphqlApi, type ProjectsApi } from './projects';
import { Run } from './run/run.entity';
import { RunService } from './run/run.service';
import { RunNode } from './run/runNode.entity';
import { RunPause } from './run/runPause.entity';
import type { RunsSettings } from './settings';
import { OpStore } from './store/opStore';
import { RunStore } from './store/runStore';

/** The TypeORM entities of the runs tables (the services' reads). */
export const runsEntities = [Run, RunNode, RunPause, Op];

/** The runs domain's services, for its GraphQL face and in-process callers (the rib host's run seams). */
export interface RunsServices {
  runs: RunService;
  ops: OpService;
  catalog: CatalogService;
  events: EventLog;
  /** startWorkflow's idempotency keys. */
  idempotency: IdempotencyKeys;
  settings: RunsSettings;
  dataSource: DataSource;
}

export interface OpenRunsDomainOptions {
  databaseUrl: string;
  settings: RunsSettings;
  /** Where runs and ops execute (`@keelson/temporal`'s `temporalRunsExecutor`). */
  executor: RunsExecutor;
  /** @default the projects subgraph at settings.projectsUrl, over GraphQL, as `identity` */
  projects?: ProjectsApi;
  /** Who this process is to the projects subgraph. */
  identity: ServiceIdentity;
  /** Session bounds of the pool's connections. */
  pg?: PgTimeouts;
  log: Logger;
}

/** The runs domain, opened. */
export interface OpenedRunsDomain {
  services: RunsServices;
  /** SQL statements sent so far. */
  queryCount(): number;
  /** Closes the database (the executor is its opener's to close). */
  close(): Promise<void>;
}

/**
 * Opens the runs domain: migrate (under the database-wide migration lock, so another process opening
 * it at the same time is safe), build the catalog and the services over the given executor.
 */
export async function openRunsDomain(opts: OpenRunsDomainOptions): Promise<OpenedRunsDomain> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: runsEntities,
    migrations: runsMigrations,
    migrationsTableName: RUNS_MIGRATIONS_TABLE,
    log: opts.log,
    ...(opts.pg ? { pg: opts.pg } : {}),
  });
  const { dataSource, queries, events } = state;
  const { executor, settings } = opts;
  const projects = opts.projects ?? projectsGraphqlApi(settings.projectsUrl, { identity: opts.identity });
  const catalog = new CatalogService(
    new WorkflowCatalog({ bundledDir: settings.bundledWorkflowsDir, globalDir: join(settings.keelsonHome, 'workflows'), ribs: settings.ribWorkflows }),
    projects,
  );
  const runs = new RunService({ dataSource, store: new RunStore(dataSource, events), events, catalog, projects, executor, settings, log: opts.log });
  const ops = new OpService({ dataSource, store: new OpStore(dataSource, events), executor, settings });
  return {
    services: { runs, ops, catalog, events, idempotency: new IdempotencyKeys(dataSource), settings, dataSource },
    queryCount: () => queries.count,
    close: () => state.close(),
  };
}
