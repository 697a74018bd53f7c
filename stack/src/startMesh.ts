import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { startGateway } from '@keelson/gateway';
import { expandHome, parseEnv, type MeshEnv } from '@keelson/schema';
import { createLogger, type Logger } from '@keelson/service';
import { projectsSettings, start as startProjects, type RunningProjects } from '@keelson/subgraph-projects';
import { configureTemporalRuntime, connectClient, createActivities, ensureTemporalCli, startDevServer, startEcho, startWorker, type DevServer } from '@keelson/temporal';
import { ensureDatabase } from './database';

export interface MeshOptions {
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Every service on a free port (tests). @default false: the KEELSON_*_PORT defaults */
  ephemeralPorts?: boolean;
  /** An existing Temporal frontend; otherwise TEMPORAL_ADDRESS, otherwise a dev server is started. */
  temporal?: { address: string; uiUrl?: string };
  /** Run the proof workflow once after boot and log its result. @default false */
  proof?: boolean;
  /** The caller handles SIGINT/SIGTERM by calling stop() (an orderly shutdown). @default false */
  handlesSignals?: boolean;
  /** Progress lines for a human watching the boot. @default discard */
  progress?: (line: string) => void;
  log?: Logger;
}

export interface RunningMesh {
  gatewayUrl: string;
  gatewayWsUrl: string;
  temporal: { address: string; namespace: string; uiUrl?: string };
  subgraphUrls: Record<string, string>;
  projects: RunningProjects;
  env: MeshEnv;
  /** Stops everything in reverse boot order. Idempotent. */
  stop(): Promise<void>;
}

/** The checked-in composed supergraph. */
export function supergraphPath(): string {
  return join(dirname(require.resolve('@keelson/schema/package.json')), 'supergraph.graphql');
}

/**
 * Boots the whole mesh in one process: Postgres (checked, database created if missing), Temporal
 * (the given server, TEMPORAL_ADDRESS, or a file-backed dev server), every subgraph, the worker and
 * the gateway. A failure part-way stops what already started.
 */
export async function startMesh(opts: MeshOptions = {}): Promise<RunningMesh> {
  const rawEnv = opts.env ?? process.env;
  const env = parseEnv(rawEnv);
  const log = opts.log ?? createLogger('mesh', env.KEELSON_LOG_LEVEL);
  const progress = opts.progress ?? (() => {});
  const port = (p: number) => (opts.ephemeralPorts ? 0 : p);
  const userHome = homedir();
  const home = expandHome(env.KEELSON_HOME ?? join(userHome, '.keelson'), userHome);
  const stops: { name: string; stop: () => Promise<void> }[] = [];
  const stopAll = async () => {
    for (const step of stops.splice(0).reverse()) {
      progress(`stopping ${step.name}`);
      await step.stop().catch((err: unknown) => log.error({ err }, `stopping ${step.name} failed`));
    }
  };

  try {
    progress(`Postgres: checking ${new URL(env.DATABASE_URL).host}`);
    const db = await ensureDatabase(env.DATABASE_URL);
    if (db.created) progress(`Postgres: created database ${new URL(env.DATABASE_URL).pathname.slice(1)}`);

    let temporal: RunningMesh['temporal'];
    if (opts.temporal) {
      temporal = { ...opts.temporal, namespace: env.TEMPORAL_NAMESPACE };
    } else if (env.TEMPORAL_ADDRESS) {
      temporal = { address: env.TEMPORAL_ADDRESS, namespace: env.TEMPORAL_NAMESPACE, uiUrl: env.TEMPORAL_UI_URL };
    } else {
      const cli = await ensureTemporalCli({ home, log: (line) => progress(`temporal build: ${line}`) });
      const dbFilename = join(home, 'temporal', 'dev.db');
      progress(`Temporal: starting the dev server (${cli}, state in ${dbFilename})`);
      const { mkdir } = await import('node:fs/promises');
      await mkdir(dirname(dbFilename), { recursive: true });
      const server: DevServer = await startDevServer({
        cli,
        port: port(env.KEELSON_TEMPORAL_PORT),
        uiPort: port(env.KEELSON_TEMPORAL_UI_PORT),
        dbFilename,
        namespace: env.TEMPORAL_NAMESPACE,
        // main.ts owns SIGINT/SIGTERM and stops the dev server last, after the worker drained.
        killOnSignals: !opts.handlesSignals,
        log: (line) => log.debug({ temporal: line }, 'temporal dev server'),
      });
      stops.push({ name: 'Temporal dev server', stop: () => server.stop() });
      temporal = { address: server.address, namespace: server.namespace, uiUrl: server.uiUrl };
    }

    progress('Subgraphs: projects');
    const projects = await startProjects({
      databaseUrl: env.DATABASE_URL,
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_PROJECTS_PORT),
      insecureBind: env.KEELSON_INSECURE_BIND,
      settings: projectsSettings(env, userHome, rawEnv),
      log: log.child({ service: 'projects' }),
    });
    stops.push({ name: 'projects subgraph', stop: () => projects.stop() });

    configureTemporalRuntime(env.KEELSON_LOG_LEVEL === 'debug' ? 'info' : 'warn');
    progress(`Worker: polling ${temporal.address}`);
    const worker = await startWorker({ address: temporal.address, namespace: temporal.namespace, activities: createActivities() });
    stops.push({ name: 'worker', stop: () => worker.stop() });

    const subgraphUrls = { projects: projects.url };
    progress('Gateway');
    const gateway = await startGateway({
      supergraphSdl: await readFile(supergraphPath(), 'utf8'),
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_GATEWAY_PORT),
      insecureBind: env.KEELSON_INSECURE_BIND,
      subgraphUrls,
      maxDepth: env.KEELSON_MAX_QUERY_DEPTH,
      log: log.child({ service: 'gateway' }),
    });
    stops.push({ name: 'gateway', stop: () => gateway.stop() });

    if (opts.proof) {
      const client = await connectClient({ address: temporal.address, namespace: temporal.namespace });
      try {
        const handle = await startEcho(client, 'keelson mesh is up');
        const result = await handle.result();
        progress(`Temporal: proof workflow ${handle.workflowId} answered "${result.echoed}"`);
      } finally {
        await client.connection.close();
      }
    }

    let stopping: Promise<void> | undefined;
    return {
      gatewayUrl: gateway.url,
      gatewayWsUrl: gateway.wsUrl,
      temporal,
      subgraphUrls,
      projects,
      env,
      stop: () => (stopping ??= stopAll()),
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
