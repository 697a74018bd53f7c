import { createDataSource, initializeAndMigrate, type EventLog } from '@keelson/platform';
import { BusAccess, resolveBusSetup, SwarmStore, swarmMigrations, SWARM_MIGRATIONS_TABLE, type PublishSettings } from '@keelson/swarms';
import { parseEnv } from '@keelson/schema';
import type { Logger, PgTimeouts } from '@keelson/service';
import type { SwarmActivityDeps } from './activities';
import type { OpenedPromptExecutor } from './activities/prompt/openPromptExecutor';
import type { ProjectsApi } from '@keelson/runs';
import type { OpStore } from '@keelson/runs';
import type { OpenedActivityDeps } from './workerDeps';

export interface SwarmActivityDepsOptions {
  databaseUrl: string;
  /** The worker's event log (swarm events are appended in the swarm store's own transactions). */
  events: EventLog;
  ops: OpStore;
  /** CLICKCLACK_* (which bus), and what a managed server's child inherits. */
  env: Record<string, string | undefined>;
  /** The Keelson home: a managed server lives under `<home>/rib-swarm/clickclack`. */
  home: string;
  /** Agent turns (the worker's provider registry and rib host); absent, swarm turns fail CAPABILITY_UNSUPPORTED. */
  agentTurns?: Pick<OpenedPromptExecutor, 'turns' | 'ribHost'>;
  log: Logger;
  /** Write mode's worktree leases and mutation lock (the projects subgraph). */
  projects?: ProjectsApi;
  /** Postgres session bounds. @default the kit's */
  pg?: PgTimeouts;
  /** A turn's lease. @default 15000 */
  turnLeaseMs?: number;
}

export interface OpenedSwarmActivityDeps {
  deps: SwarmActivityDeps;
  close(): Promise<void>;
}

/** Write mode's publishing, as the operator configured it (KEELSON_SWARM_PUBLISH_PROJECTS, KEELSON_SWARM_PR_COMMAND). */
function publishSettings(env: Record<string, string | undefined>): PublishSettings {
  const e = parseEnv(env);
  return { projects: e.KEELSON_SWARM_PUBLISH_PROJECTS, ...(e.KEELSON_SWARM_PR_COMMAND ? { command: e.KEELSON_SWARM_PR_COMMAND } : {}), timeoutMs: e.KEELSON_SWARM_PR_TIMEOUT_MS };
}

/** The swarm activities' dependencies on a small pool of their own (the swarm tables migrated first). */
export async function openSwarmActivityDeps(opts: SwarmActivityDepsOptions): Promise<OpenedSwarmActivityDeps> {
  const { dataSource } = createDataSource({ url: opts.databaseUrl, entities: [], migrations: swarmMigrations, migrationsTableName: SWARM_MIGRATIONS_TABLE, log: opts.log, poolSize: 3, ...(opts.pg ? { pg: opts.pg } : {}) });
  await initializeAndMigrate(dataSource);
  const turns = opts.agentTurns;
  return {
    deps: {
      store: new SwarmStore(dataSource, opts.events),
      ops: opts.ops,
      bus: new BusAccess(resolveBusSetup(opts.env, opts.home), opts.env),
      ...(turns ? { turns: { run: (req) => turns.turns.run(req), ready: () => turns.ribHost.get() } } : {}),
      ...(opts.projects ? { projects: opts.projects } : {}),
      gitEnv: opts.env,
      publish: publishSettings(opts.env),
      log: opts.log,
      ...(opts.turnLeaseMs !== undefined ? { turnLeaseMs: opts.turnLeaseMs } : {}),
    },
    close: () => dataSource.destroy(),
  };
}

/**
 * A worker's swarm activities beside its run and op activities: the same event log, op store, agent
 * turns and projects API.
 */
export function openWorkerSwarmDeps(
  worker: OpenedActivityDeps,
  opts: Pick<SwarmActivityDepsOptions, 'databaseUrl' | 'env' | 'home' | 'pg' | 'log'> & { heartbeatTimeoutMs: number },
): Promise<OpenedSwarmActivityDeps> {
  return openSwarmActivityDeps({
    databaseUrl: opts.databaseUrl,
    events: worker.events,
    ops: worker.deps.ops!.store,
    env: opts.env,
    home: opts.home,
    ...(worker.agentTurns ? { agentTurns: worker.agentTurns } : {}),
    ...(opts.pg ? { pg: opts.pg } : {}),
    ...(worker.deps.runs?.projects ? { projects: worker.deps.runs.projects } : {}),
    // A lost worker's turn is taken over once its lease lapses, about when Temporal retries it.
    turnLeaseMs: Math.min(opts.heartbeatTimeoutMs, 15_000),
    log: opts.log,
  });
}
