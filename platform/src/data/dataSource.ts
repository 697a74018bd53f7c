import { defaultPgTimeouts, type Logger as LogSink, type PgTimeouts } from '@keelson/service';
import { Client, type ClientConfig } from 'pg';
import { DataSource, type Logger as OrmLogger, type MixedList, type EntitySchema } from 'typeorm';
import { platformMigrations } from '../eventLog/eventLog.migration';

/** Counts every SQL statement a DataSource sends; benchmarks and tests read it around a request. */
export class QueryCounter implements OrmLogger {
  count = 0;
  constructor(private readonly sink?: LogSink) {}
  logQuery(query: string): void {
    this.count += 1;
    this.sink?.trace({ query }, 'sql');
  }
  logQueryError(error: string | Error, query: string): void {
    this.sink?.debug({ err: error, query }, 'sql failed');
  }
  logQuerySlow(time: number, query: string): void {
    this.sink?.warn({ time, query }, 'slow sql');
  }
  logSchemaBuild(): void {}
  logMigration(message: string): void {
    this.sink?.info(message);
  }
  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.sink?.warn({ message }, 'typeorm');
    else this.sink?.debug({ message }, 'typeorm');
  }
}

export interface DataSourceOptions {
  url: string;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  entities: MixedList<Function | string | EntitySchema>;
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  migrations: Function[];
  /** Each subgraph keeps its own migration history. */
  migrationsTableName: string;
  log: LogSink;
  /** @default 10 */
  poolSize?: number;
  /** Session bounds of every pooled connection. @default {@link defaultPgTimeouts} */
  pg?: PgTimeouts;
}

export interface MeshDataSource {
  dataSource: DataSource;
  queries: QueryCounter;
}

/**
 * A TypeORM DataSource on pg with the event-log tables' migration included. Schema changes come
 * only from migrations (never `synchronize`); a dropped pooled connection is logged, not fatal;
 * statements, idle transactions and connecting are bounded (`KEELSON_PG_*`).
 */
export function createDataSource(opts: DataSourceOptions): MeshDataSource {
  const pg = opts.pg ?? defaultPgTimeouts;
  const queries = new QueryCounter(opts.log);
  const log = opts.log;
  /**
   * A pooled connection that is never without an 'error' listener. The pool listens only while a
   * connection is idle: one checked out (held by a transaction or query runner) whose backend is
   * terminated would otherwise emit an unhandled 'error' and take the process down. Its next query
   * fails instead, and the pool drops it.
   */
  class GuardedClient extends Client {
    constructor(config?: string | ClientConfig) {
      super(config);
      this.on('error', (err) => log.warn({ err }, 'postgres connection lost'));
    }
  }
  const dataSource = new DataSource({
    type: 'postgres',
    url: opts.url,
    entities: opts.entities,
    migrations: [...platformMigrations, ...opts.migrations],
    migrationsTableName: opts.migrationsTableName,
    migrationsTransactionMode: 'each',
    synchronize: false,
    logger: queries,
    poolSize: opts.poolSize ?? 10,
    poolErrorHandler: (err: unknown) => opts.log.warn({ err }, 'postgres pool connection error'),
    applicationName: `keelson-${opts.migrationsTableName.replace(/_migrations$/, '')}`,
    connectTimeoutMS: pg.connectTimeoutMs,
    // pg applies these per connection: no statement or forgotten transaction holds a backend forever.
    // query_timeout is the client's own bound: a Postgres that stops answering (a hung host, a dead
    // link) never sees the statement, so only the client can end the wait.
    extra: {
      statement_timeout: pg.statementTimeoutMs,
      idle_in_transaction_session_timeout: pg.idleInTransactionTimeoutMs,
      query_timeout: pg.statementTimeoutMs + 2_000,
      Client: GuardedClient,
    },
  });
  return { dataSource, queries };
}

/** Advisory-lock key serializing migrations across every service sharing the database. */
const MIGRATION_LOCK_KEY = 7_246_601_138;

/**
 * Initializes the DataSource and runs pending migrations while holding a database-wide advisory
 * lock, so services booting together never race on the same DDL.
 */
export async function initializeAndMigrate(dataSource: DataSource): Promise<void> {
  if (!dataSource.isInitialized) await dataSource.initialize();
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  try {
    await runner.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    try {
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await runner.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
    }
  } finally {
    await runner.release();
  }
}

/**
 * Runs `work` on a connection of its own to the data source's database whose statements have no
 * time bound: maintenance DDL that lasts as long as the data it reads (an index built over every
 * row at boot), which the pool's `statement_timeout` and the client's `query_timeout` would cancel
 * part way. Connecting stays bounded; the connection is closed afterwards, whatever happened.
 */
export async function withMaintenanceConnection<T>(dataSource: DataSource, work: (client: Client) => Promise<T>): Promise<T> {
  const options = dataSource.options as { url?: string; connectTimeoutMS?: number; applicationName?: string };
  const client = new Client({
    connectionString: options.url,
    connectionTimeoutMillis: options.connectTimeoutMS,
    application_name: `${options.applicationName ?? 'keelson'}-maintenance`,
  });
  // A lost connection fails the statement in flight; this keeps the 'error' event from going unhandled.
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query("SELECT set_config('statement_timeout', '0', false)");
    return await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}
