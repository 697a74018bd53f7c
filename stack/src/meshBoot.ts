import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { startGateway, gatewayExecutionFromEnv, subscriptionLimitsFromEnv, supergraphPath, tlsOptions } from '@keelson/gateway';
import { keelsonHome, parseEnv, type MeshEnv } from '@keelson/schema';
import { createLogger, meshSecurityFromEnv, startTracing, tracingFromEnv, type Logger, type MeshSecurity } from '@keelson/service';
import type { RunningIdentity } from '@keelson/subgraph-identity';
import {
  configureTemporalRuntime,
  connectClient,
  deleteCompactionSchedule,
  ensureCompactionSchedule,
  ensureTemporalCli,
  startDevServer,
  startEcho,
  type DevServer,
} from '@keelson/temporal';
import type { Client } from '@temporalio/client';
import { startGatewayProcess, type GatewayProcess } from './gatewayProcess';
import type { OwnedProcessNote } from './ownership';
import type { MeshOptions, RunningMesh } from './startMesh';

/** What every step of `startMesh` reads: its options, the env, the loggers, security, ports and the stop list. */
export interface MeshBoot {
  opts: MeshOptions;
  rawEnv: NodeJS.ProcessEnv;
  env: MeshEnv;
  /** The process's logger, without a `service`: each service binds its own. */
  root: Logger;
  /** The mesh's own records. */
  log: Logger;
  security: MeshSecurity;
  progress: (line: string) => void;
  /** A service's configured port, or 0 (a free one) with ephemeral ports. */
  port: (p: number) => number;
  userHome: string;
  home: string;
  /** What the boot started so far, in boot order (stopped in reverse). */
  stops: { name: string; stop: () => Promise<void> }[];
}

/** Reads the options and the env once, for every step of the boot. */
export function meshBootOf(opts: MeshOptions): MeshBoot {
  const rawEnv = opts.env ?? process.env;
  const env = parseEnv(rawEnv);
  // One logger for the process: the mesh's own records and each service's, told apart by `service`.
  const root = opts.log ?? createLogger(undefined, env.KEELSON_LOG_LEVEL);
  const log = root.child({ service: 'mesh' });
  // Read once: every service shares the assertion key (KEELSON_ASSERTION_SECRET or <home>/assertion.key).
  const security = meshSecurityFromEnv(env);
  const progress = opts.progress ?? (() => {});
  const port = (p: number) => (opts.ephemeralPorts ? 0 : p);
  const userHome = homedir();
  const home = keelsonHome(env, userHome);
  return { opts, rawEnv, env, root, log, security, progress, port, userHome, home, stops: [] };
}

/** Stops what the boot started, in reverse order, logging (not throwing) each step that fails. */
export async function stopMeshSteps(boot: MeshBoot): Promise<void> {
  for (const step of boot.stops.splice(0).reverse()) {
    boot.progress(`stopping ${step.name}`);
    await step.stop().catch((err: unknown) => boot.log.error({ err }, `stopping ${step.name} failed`));
  }
}

/**
 * Tracing for every service, the Temporal client and the worker, then the Temporal Runtime (the SDK's
 * logger and the worker's metrics endpoint): both before anything touches Temporal.
 */
export function startMeshTelemetry(boot: MeshBoot): { tracing: ReturnType<typeof startTracing>; workerMetricsUrl: string | null } {
  const { opts, rawEnv, env, root, log, security, progress, stops } = boot;
  // First: every service's spans, the Temporal client's and the worker's go through this setup.
  const tracing = startTracing(tracingFromEnv(rawEnv), 'mesh');
  stops.push({ name: 'tracing', stop: () => tracing.stop() });
  stops.push({ name: 'metrics token checks', stop: async () => security.apiTokens?.close() });
  progress(tracing.settings.enabled ? `Tracing: OTLP/HTTP to ${tracing.settings.tracesUrl}` : 'Tracing: off (set OTEL_EXPORTER_OTLP_ENDPOINT to turn it on)');
  // Before anything touches Temporal (the ribs' and sessions' clients install a default Runtime):
  // the SDK's logger, and worker metrics on a port of their own; with ephemeral ports (tests) only when asked for by name.
  const workerMetricsPort = opts.ephemeralPorts && !rawEnv.KEELSON_WORKER_METRICS_PORT ? 0 : env.KEELSON_WORKER_METRICS_PORT;
  const workerMetricsAddress = workerMetricsPort > 0 && opts.worker !== false ? `${env.KEELSON_HOST}:${workerMetricsPort}` : undefined;
  const runtimeInstalled = configureTemporalRuntime(env.KEELSON_LOG_LEVEL === 'debug' ? 'info' : 'warn', { log: root.child({ service: 'worker' }), ...(workerMetricsAddress ? { metricsAddress: workerMetricsAddress } : {}) });
  if (workerMetricsAddress && !runtimeInstalled) log.warn({ address: workerMetricsAddress }, 'the Temporal Runtime was installed earlier in this process: worker metrics are not served');
  const workerMetricsUrl = workerMetricsAddress && runtimeInstalled ? `http://${workerMetricsAddress}/metrics` : null;
  return { tracing, workerMetricsUrl };
}

/**
 * The Temporal frontend: the given one, TEMPORAL_ADDRESS, or a file-backed dev server started (or
 * adopted) here, noted in `owned` for `npm run doctor`.
 */
export async function bootTemporal(boot: MeshBoot, owned: OwnedProcessNote[]): Promise<RunningMesh['temporal']> {
  const { opts, env, log, progress, port, home, stops } = boot;
  if (opts.temporal) return { ...opts.temporal, namespace: env.TEMPORAL_NAMESPACE };
  if (env.TEMPORAL_ADDRESS) return { address: env.TEMPORAL_ADDRESS, namespace: env.TEMPORAL_NAMESPACE, uiUrl: env.TEMPORAL_UI_URL };
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
  if (server.previous) owned.push({ what: 'Temporal dev server', pid: server.previous.pid, outcome: server.previous.outcome, detail: dbFilename });
  if (server.previous?.outcome === 'adopted') progress(`Temporal: adopted the dev server (pid ${server.previous.pid}) an earlier start left running on ${dbFilename}`);
  if (server.previous?.outcome === 'ended') progress(`Temporal: ended the dev server (pid ${server.previous.pid}) an earlier start left on ${dbFilename}`);
  return { address: server.address, namespace: server.namespace, uiUrl: server.uiUrl };
}

/** Runs `fn` with a Temporal client on a connection of its own, closed after. */
async function withTemporalClient<T>(temporal: { address: string; namespace: string }, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await connectClient({ address: temporal.address, namespace: temporal.namespace });
  try {
    return await fn(client);
  } finally {
    await client.connection.close();
  }
}

/**
 * Memory compaction passes, scheduled by Temporal (KEELSON_MEMORY_COMPACTION_*; interval 0: none):
 * the Schedule's id, or null when compaction is off.
 */
export async function bootCompaction(boot: MeshBoot, temporal: RunningMesh['temporal']): Promise<string | null> {
  const { opts, env, progress, stops } = boot;
  const compaction = await withTemporalClient(temporal, (client) =>
    ensureCompactionSchedule(client, {
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      intervalMs: opts.compaction === false ? 0 : env.KEELSON_MEMORY_COMPACTION_INTERVAL_MS,
      input: { window: env.KEELSON_MEMORY_COMPACTION_WINDOW, modelClass: 'fast' },
    }),
  );
  if (compaction && opts.compaction && opts.compaction.removeOnStop) {
    stops.push({ name: 'compaction schedule', stop: () => withTemporalClient(temporal, (client) => deleteCompactionSchedule(client, env.TEMPORAL_TASK_QUEUE)) });
  }
  progress(compaction ? `Memory: compaction scheduled every ${env.KEELSON_MEMORY_COMPACTION_INTERVAL_MS} ms (Temporal Schedule ${compaction})` : 'Memory: compaction is off');
  return compaction;
}

/** The gateway over every subgraph: in this process, or in a process of its own (`gateway: 'process'`). */
export async function bootGateway(
  boot: MeshBoot,
  subgraphUrls: Record<string, string>,
  identity: RunningIdentity,
): Promise<{ gateway: { url: string; wsUrl: string }; gatewayProcess: GatewayProcess | null }> {
  const { opts, rawEnv, env, root, security, progress, port, stops } = boot;
  if (opts.gateway === 'process') {
    progress('Gateway: in a process of its own');
    const child = await startGatewayProcess({ env: rawEnv, host: env.KEELSON_HOST, port: port(env.KEELSON_GATEWAY_PORT), subgraphUrls });
    stops.push({ name: 'gateway process', stop: () => child.stop() });
    return { gateway: child, gatewayProcess: child };
  }
  progress('Gateway');
  const inProcess = await startGateway({
    supergraphSdl: await readFile(supergraphPath(), 'utf8'),
    host: env.KEELSON_HOST,
    port: port(env.KEELSON_GATEWAY_PORT),
    security,
    subgraphUrls,
    ...(security.auth === 'on' ? { credentials: identity.identity.authenticator } : {}),
    subscriptions: subscriptionLimitsFromEnv(env),
    ...gatewayExecutionFromEnv(env),
    ...(await tlsOptions(env)),
    log: root.child({ service: 'gateway' }),
  });
  stops.push({ name: 'gateway', stop: () => inProcess.stop() });
  return { gateway: inProcess, gatewayProcess: null };
}

/** The proof workflow, run once after boot (`proof: true`), its answer reported as progress. */
export async function runMeshProof(boot: MeshBoot, temporal: RunningMesh['temporal']): Promise<void> {
  const client = await connectClient({ address: temporal.address, namespace: temporal.namespace });
  try {
    const handle = await startEcho(client, 'keelson mesh is up', { taskQueue: boot.env.TEMPORAL_TASK_QUEUE });
    const result = await handle.result();
    boot.progress(`Temporal: proof workflow ${handle.workflowId} answered "${result.echoed}"`);
  } finally {
    await client.connection.close();
  }
}
