import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { createSandbox, type ProcessSandbox, createDataSource, EventLog, EventNotifier, initializeAndMigrate, AuditLog } from '@keelson/platform';
import { keelsonHome, parseEnv } from '@keelson/schema';
import type { Logger, PgTimeouts, ServiceIdentity } from '@keelson/service';
import type { DataSource } from 'typeorm';
import { ChatStore, chatMigrations, CHAT_MIGRATIONS_TABLE } from '@keelson/chats';
import { OpStore, projectsGraphqlApi, RUNS_MIGRATIONS_TABLE, RunStore, runsMigrations } from '@keelson/runs';
import type { ActivityDeps, OpRegistry, PromptNodeExecutor } from './activities';
import { builtinOps } from './activities/ops/countdown';
import { openPromptExecutor, type OpenedPromptExecutor, type PromptExecutorOptions } from './activities/prompt/openPromptExecutor';

export interface ActivityDepsOptions {
  databaseUrl: string;
  /** The projects subgraph's GraphQL URL, for worktree leases. */
  projectsUrl?: string;
  /** Who the worker is to other mesh services (required with projectsUrl). */
  identity?: ServiceIdentity;
  /** Session bounds of the pool's connections. */
  pg?: PgTimeouts;
  log: Logger;
  /** Op kinds beyond the built-in `countdown`. */
  ops?: OpRegistry;
  /** Runs prompt nodes; absent (and no `agentTurns`), prompt nodes fail CAPABILITY_UNSUPPORTED. */
  promptExecutor?: PromptNodeExecutor;
  /**
   * Prompt nodes through `@keelson/providers`: providers from `env` and the config file, rib tools
   * through the worker's own rib host, usage rows and sessions in this pool. Ignored with `promptExecutor`.
   * Without `ribHost.approvals`, a policy `ask` about a prompt node's tool denies; a warning says so at boot.
   */
  agentTurns?: PromptExecutorOptions;
  /** @default 5 */
  poolSize?: number;
  /**
   * The bubblewrap sandbox of bash and script nodes. @default createSandbox from `env`: KEELSON_SANDBOX,
   * KEELSON_HOME hidden, a warning through `log` when off
   */
  sandbox?: ProcessSandbox;
  /** Read for the default sandbox, and what a command's environment starts from (its allowlist only). @default process.env */
  env?: Record<string, string | undefined>;
}

export interface OpenedActivityDeps {
  deps: ActivityDeps;
  /** The pool the stores write through (tests read state with it). */
  dataSource: DataSource;
  /** The event log the stores append to. */
  events: EventLog;
  /** Prompt nodes' agent-turn engine and the worker's rib host, when `agentTurns` was given. */
  agentTurns?: OpenedPromptExecutor;
  /** Ends the LISTEN connection and the pool. */
  close(): Promise<void>;
}

/** The sandbox of a worker's command nodes, as the environment configures it (KEELSON_SANDBOX; KEELSON_HOME hidden). */
export function commandSandbox(env: Record<string, string | undefined>, log: Logger): ProcessSandbox {
  const parsed = parseEnv(env);
  const home = resolve(keelsonHome(parsed, homedir()));
  return createSandbox({ mode: parsed.KEELSON_SANDBOX, hidden: [home], warn: (message) => log.warn(message) });
}

/**
 * Everything a worker's activities need, on a pool of its own: the run and op stores (migrated, so a
 * worker process can start before the runs subgraph), the event log, the projects API.
 */
export async function openActivityDeps(opts: ActivityDepsOptions): Promise<OpenedActivityDeps> {
  const { dataSource } = createDataSource({
    url: opts.databaseUrl,
    entities: [],
    migrations: runsMigrations,
    migrationsTableName: RUNS_MIGRATIONS_TABLE,
    log: opts.log,
    poolSize: opts.poolSize ?? 5,
    ...(opts.pg ? { pg: opts.pg } : {}),
  });
  await initializeAndMigrate(dataSource);
  const notifier = new EventNotifier({ url: opts.databaseUrl, log: opts.log, applicationName: 'keelson-worker-listener' });
  const events = new EventLog(dataSource, notifier);
  if (opts.projectsUrl && !opts.identity) throw new Error('openActivityDeps: projectsUrl needs the worker\'s service identity');
  const projects = opts.projectsUrl ? projectsGraphqlApi(opts.projectsUrl, { identity: opts.identity! }) : undefined;
  // The rib tools prompt nodes call, recorded like every mutation (the audit stream of the event log).
  const audit = new AuditLog(dataSource, opts.log, 'worker');
  const prompts =
    !opts.promptExecutor && opts.agentTurns
      ? openPromptExecutor({ ...opts.agentTurns, ribHost: { ...opts.agentTurns.ribHost, audit }, db: dataSource, log: opts.log })
      : undefined;
  if (prompts && !opts.agentTurns?.ribHost?.approvals) {
    opts.log.warn('no approval channel: a policy `ask` about a prompt node\'s tool is denied on this worker (the worker app, apps/worker/main.ts, wires one)');
  }
  // The chat tables on a small pool of their own, migrated by their own list (a worker may start first).
  const chatState = createDataSource({ url: opts.databaseUrl, entities: [], migrations: chatMigrations, migrationsTableName: CHAT_MIGRATIONS_TABLE, log: opts.log, poolSize: 2, ...(opts.pg ? { pg: opts.pg } : {}) });
  await initializeAndMigrate(chatState.dataSource);
  const deps: ActivityDeps = {
    chat: {
      store: new ChatStore(chatState.dataSource, events),
      ...(prompts ? { turns: { run: (req) => prompts.turns.run(req), ready: () => prompts.ribHost.get() } } : {}),
      log: opts.log,
    },
    runs: {
      store: new RunStore(dataSource, events),
      projects,
      promptExecutor: opts.promptExecutor ?? prompts?.executor,
      log: opts.log,
      sandbox: opts.sandbox ?? commandSandbox(opts.env ?? process.env, opts.log),
      env: opts.env ?? process.env,
    },
    ops: { store: new OpStore(dataSource, events), events, registry: { ...builtinOps, ...opts.ops }, log: opts.log },
  };
  return {
    deps,
    dataSource,
    events,
    ...(prompts ? { agentTurns: prompts } : {}),
    async close() {
      await prompts?.close();
      await audit.flush();
      await notifier.stop();
      await chatState.dataSource.destroy();
      await dataSource.destroy();
    },
  };
}
