import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from '@keelson/service';
import { ensureNamespaceAndSearchAttributes } from '@keelson/temporal';
import { startClusterProcess, type ClusterProcess } from './clusterProcess';
import { CLUSTER_TEMPORAL_POOLS } from './clusterShape';

const run = promisify(execFile);

export interface TemporalServerOptions {
  /** Where temporal-server and temporal-sql-tool are (scripts/temporal-server/build.sh puts them in `<KEELSON_HOME>/bin`). */
  binDir: string;
  /** A Postgres URL whose user may create databases; its database is ignored. */
  postgresUrl: string;
  /** The persistence database; visibility is `<database>_visibility`. Created and migrated if needed. */
  database: string;
  /** Where its config, dynamic config and log go. */
  dir: string;
  namespace: string;
}

export interface TemporalServer {
  /** The frontend, host:port. */
  address: string;
  databases: { persistence: string; visibility: string };
  process(): ClusterProcess;
  /** Stops it and starts it again on the same ports and databases (its state survives). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** The binaries scripts/temporal-server/build.sh makes, or a message saying how to build them. */
export function temporalServerBinaries(binDir: string): { server: string; sqlTool: string } {
  const server = join(binDir, 'temporal-server');
  const sqlTool = join(binDir, 'temporal-sql-tool');
  if (!existsSync(server) || !existsSync(sqlTool)) throw new Error(`no Temporal server in ${binDir}: build it once with scripts/temporal-server/build.sh (KEELSON_HOME=${join(binDir, '..')})`);
  return { server, sqlTool };
}

/**
 * Creates (if missing) and migrates the persistence and visibility databases with temporal-sql-tool
 * and its embedded postgres12 schemas: `setup-schema -v 0.0` on a database without Temporal's
 * version table, then `update-schema` to the latest (a no-op when already there).
 */
export async function setupTemporalSchemas(sqlTool: string, postgresUrl: string, databases: { persistence: string; visibility: string }): Promise<void> {
  const url = new URL(postgresUrl);
  const conn = ['--plugin', 'postgres12', '--endpoint', url.hostname, '--port', url.port || '5432', '--user', decodeURIComponent(url.username || 'postgres')];
  const env = { ...process.env, ...(url.password ? { SQL_PASSWORD: decodeURIComponent(url.password) } : {}) };
  for (const [database, schema] of [
    [databases.persistence, 'postgresql/v12/temporal'],
    [databases.visibility, 'postgresql/v12/visibility'],
  ] as const) {
    if (!(await hasVersionTable(postgresUrl, database))) {
      await run(sqlTool, [...conn, '--database', database, 'create-database'], { env }).catch((err: Error & { stderr?: string }) => {
        if (!/already exists/.test(`${err.stderr ?? ''}${err.message}`)) throw err;
      });
      await run(sqlTool, [...conn, '--database', database, 'setup-schema', '-v', '0.0'], { env });
    }
    await run(sqlTool, [...conn, '--database', database, 'update-schema', '--schema-name', schema], { env });
  }
}

async function hasVersionTable(postgresUrl: string, database: string): Promise<boolean> {
  const url = new URL(postgresUrl);
  url.pathname = `/${database}`;
  const client = new Client({ connectionString: url.toString() });
  try {
    await client.connect();
  } catch (err) {
    if ((err as { code?: string }).code === '3D000') return false;
    throw err;
  }
  try {
    const { rows } = await client.query<{ present: boolean }>("SELECT to_regclass('public.schema_version') IS NOT NULL AS present");
    return rows[0]!.present;
  } finally {
    await client.end();
  }
}

/** The server's static config (JSON is YAML): one node, every service, Postgres persistence and SQL visibility. */
function serverConfig(postgresUrl: string, databases: { persistence: string; visibility: string }, ports: number[], dynamicConfigFile: string): unknown {
  const url = new URL(postgresUrl);
  const store = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${url.hostname}:${url.port || '5432'}`,
      connectProtocol: 'tcp',
      user: decodeURIComponent(url.username || 'postgres'),
      password: decodeURIComponent(url.password),
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const [frontend, frontendHttp, frontendMembership, history, historyMembership, matching, matchingMembership, worker, workerMembership] = ports as [number, number, number, number, number, number, number, number, number];
  const rpc = (grpcPort: number, membershipPort: number, httpPort?: number) => ({ rpc: { grpcPort, membershipPort, bindOnLocalHost: true, ...(httpPort ? { httpPort } : {}) } });
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: 4,
      // Each of the four services keeps its own pool per store (see CLUSTER_TEMPORAL_POOLS).
      datastores: {
        'postgres-default': store(databases.persistence, CLUSTER_TEMPORAL_POOLS.persistence),
        'postgres-visibility': store(databases.visibility, CLUSTER_TEMPORAL_POOLS.visibility),
      },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' } },
    services: {
      frontend: rpc(frontend, frontendMembership, frontendHttp),
      history: rpc(history, historyMembership),
      matching: rpc(matching, matchingMembership),
      worker: rpc(worker, workerMembership),
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: { active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${frontend}` } },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
    namespaceDefaults: { archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } } },
    publicClient: { hostPort: `127.0.0.1:${frontend}` },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '10s' },
  };
}

/**
 * The server's dynamic config: search attributes the mesh adds at start are honoured at once (it
 * starts workflows carrying them right after), with persistence QPS raised to match, as the dev server does.
 */
const DYNAMIC_CONFIG = `system.forceSearchAttributesCacheRefreshOnRead:
  - value: true
frontend.persistenceMaxQPS:
  - value: 10000
history.persistenceMaxQPS:
  - value: 45000
limit.maxIDLength:
  - value: 255
`;

/**
 * A Temporal server (temporal-server, Postgres persistence and SQL visibility) on free loopback
 * ports: schemas set up, the namespace registered and the mesh's search attributes added.
 */
export async function startTemporalServer(opts: TemporalServerOptions): Promise<TemporalServer> {
  const { server, sqlTool } = temporalServerBinaries(opts.binDir);
  const databases = { persistence: opts.database, visibility: `${opts.database}_visibility` };
  await setupTemporalSchemas(sqlTool, opts.postgresUrl, databases);
  const ports: number[] = [];
  while (ports.length < 9) {
    const port = await freePort();
    if (!ports.includes(port)) ports.push(port);
  }
  const configDir = join(opts.dir, 'config');
  await mkdir(configDir, { recursive: true });
  const dynamicConfigFile = join(opts.dir, 'dynamicconfig.yaml');
  await writeFile(dynamicConfigFile, DYNAMIC_CONFIG);
  await writeFile(join(configDir, 'keelson.yaml'), JSON.stringify(serverConfig(opts.postgresUrl, databases, ports, dynamicConfigFile), null, 2));
  const address = `127.0.0.1:${ports[0]}`;
  const launch = async () => {
    const started = await startClusterProcess({
      name: 'temporal-server',
      command: server,
      args: ['--root', opts.dir, '--config', 'config', '--env', 'keelson', '--allow-no-auth', 'start'],
      cwd: opts.dir,
      env: process.env,
      logFile: join(opts.dir, 'temporal-server.log'),
      ready: () => portAnswers(ports[0]!),
    });
    await ensureNamespaceAndSearchAttributes({ address, namespace: opts.namespace });
    return started;
  };
  let current = await launch();
  return {
    address,
    databases,
    process: () => current,
    async restart() {
      await current.stop();
      current = await launch();
    },
    stop: () => current.stop(),
  };
}

/** Whether something accepts TCP connections on the loopback port. */
function portAnswers(port: number): Promise<boolean> {
  return import('node:net').then(
    ({ connect }) =>
      new Promise<boolean>((resolve) => {
        const socket = connect(port, '127.0.0.1');
        socket.once('connect', () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      }),
  );
}
