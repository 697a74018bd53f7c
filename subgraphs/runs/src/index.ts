import { AuditLog } from '@keelson/platform';
import { startSubgraph } from '@keelson/kit';
import { registerApprovalSource, serviceIdentity, type Logger, type MeshSecurity, type PgTimeouts, type ServiceIdentity } from '@keelson/service';
import { openRunsDomain, type ProjectsApi, type RunsServices, type RunsSettings } from '@keelson/runs';
import { connectRunsExecutor } from '@keelson/temporal';
import type { RunsContext } from './context';
import { buildRunsSchema } from './schema';

export { buildRunsSchema } from './schema';
export { loadRunsConfig } from './config';
export type { RunsConfig } from './config';

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

/** The runs domain on Temporal without its GraphQL server (the ribs and worker processes reach it in-process). */
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
 * Opens the runs domain with Temporal as its executor: migrate (under the database-wide migration
 * lock, so another process opening it at the same time is safe), then connect to Temporal.
 */
export async function openRunsServices(opts: OpenRunsOptions): Promise<OpenedRuns> {
  const temporal = await connectRunsExecutor(opts.settings.temporal);
  try {
    const domain = await openRunsDomain({ ...opts, executor: temporal.executor });
    return {
      services: domain.services,
      queryCount: domain.queryCount,
      close: async () => {
        await temporal.close();
        await domain.close();
      },
    };
  } catch (err) {
    await temporal.close();
    throw err;
  }
}

/** Boots the runs subgraph: open the domain (migrate, connect to Temporal), then serve. */
export async function startRunsSubgraph(opts: StartRunsOptions): Promise<RunningRuns> {
  const opened = await openRunsServices({ ...opts, identity: serviceIdentity(opts.security.assertions, 'runs'), pg: opts.security.pg });
  try {
    const { services } = opened;
    const { schema } = await buildRunsSchema();
    // The approval inbox lives in the runs domain's tables: its open gates, for alerts on waiting too long.
    const unregisterApprovals = registerApprovalSource(async () =>
      (
        (await services.dataSource.query(
          `SELECT kind, count(*)::int AS open, COALESCE(EXTRACT(EPOCH FROM now() - min(opened_at)), 0)::float8 AS "oldestSeconds"
             FROM approvals WHERE status = 'OPEN' GROUP BY kind`,
        )) as { kind: string; open: number; oldestSeconds: number }[]
      ).map((r) => ({ kind: r.kind, open: r.open, oldestSeconds: Number(r.oldestSeconds) })),
    );
    const served = await startSubgraph<RunsContext>({
      name: 'runs',
      schema,
      host: opts.host,
      port: opts.port,
      security: opts.security,
      log: opts.log,
      context: (base) => ({ ...base, services }),
      audit: new AuditLog(services.dataSource, opts.log, 'runs'),
      onStop: async () => {
        unregisterApprovals();
        await opened.close();
      },
    });
    return { url: served.url, wsUrl: served.wsUrl, services, queryCount: opened.queryCount, stop: served.stop };
  } catch (err) {
    await opened.close();
    throw err;
  }
}
