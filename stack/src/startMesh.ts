import { graphqlMemoryTools } from '@keelson/host';
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { startGateway, subscriptionLimitsFromEnv, supergraphPath, tlsOptions } from '@keelson/gateway';
import { jwtSettingsFromEnv } from '@keelson/identity';
import { keelsonHome, parseEnv, type Caller, type MeshEnv } from '@keelson/schema';
import { callerIdentity, createLogger, meshSecurityFromEnv, serviceIdentity, startTracing, tracingFromEnv, type Logger, type MeshSecurity, type TracingSettings } from '@keelson/service';
import { startIdentitySubgraph as startIdentity, type RunningIdentity } from '@keelson/subgraph-identity';
import { memorySettings, type RunningMemory } from '@keelson/subgraph-memory';
import { projectsSettings, startProjectsSubgraph as startProjects, type RunningProjects } from '@keelson/subgraph-projects';
import { ribsSettings, startRibsSubgraph as startRibs, type RibHostOverrides, type RibRunsWiring, type RunningRibs } from '@keelson/subgraph-ribs';
import { startRunsSubgraph as startRuns, type RunningRuns } from '@keelson/subgraph-runs';
import { startSessionsSubgraph as startSessions, type RunningSessions } from '@keelson/subgraph-sessions';
import { configureSwarmOperator, graphqlSwarmApi } from '@keelson/rib-swarm';
import { startSwarmsSubgraph as startSwarms, swarmsSettings, type RunningSwarms } from '@keelson/subgraph-swarms';
import { harnessSettings } from '@keelson/harness';
import {
  configureTemporalRuntime,
  connectClient,
  createActivities,
  deleteCompactionSchedule,
  ensureCompactionSchedule,
  ensureTemporalCli,
  openActivityDeps,
  openMemoryActivityDeps,
  openWorkerSwarmDeps,
  startDevServer,
  startEcho,
  startWorker,
  type DevServer,
} from '@keelson/temporal';
import type { Client } from '@temporalio/client';
import { ensureDatabase } from './database';
import { startGatewayProcess, type GatewayProcess } from './gatewayProcess';
import { claimHome, recordStart, type OwnedProcessNote } from './ownership';
import { ribAgentSeams } from './ribAgentSeams';
import { startMemoryService } from './services/memoryService';
import { lateRunsPort, ribWorkflowSource, runsSettings, workerApprovals } from '@keelson/runs';

export interface MeshOptions {
  /** @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Every service on a free port (tests). @default false: the KEELSON_*_PORT defaults */
  ephemeralPorts?: boolean;
  /** An existing Temporal frontend; otherwise TEMPORAL_ADDRESS, otherwise a dev server is started. */
  temporal?: { address: string; uiUrl?: string };
  /** Run the proof workflow once after boot and log its result. @default false */
  proof?: boolean;
  /**
   * Run the Temporal worker in this process. Tests that kill a worker run `apps/worker/main.ts`
   * as a child process instead (on the same TEMPORAL_TASK_QUEUE). @default true
   */
  worker?: boolean;
  /** The caller handles SIGINT/SIGTERM by calling stop() (an orderly shutdown). @default false */
  handlesSignals?: boolean;
  /**
   * Memory compaction's Temporal Schedule: false creates none (and removes an earlier one);
   * `removeOnStop` deletes it when the mesh stops (tests sharing a Temporal server). @default kept
   */
  compaction?: false | { removeOnStop?: boolean };
  /** Progress lines for a human watching the boot. @default discard */
  progress?: (line: string) => void;
  /** The process's logger, made without a `service` (the mesh and each service bind theirs). @default createLogger() */
  log?: Logger;
  /** Passed to the rib hosts, the ribs subgraph's and the worker's (tests: an explicit `available` map of ribs). */
  ribHost?: RibHostOverrides;
  /**
   * Where the gateway runs: in this process, or in a process of its own (`apps/gateway/main.ts`,
   * owned and stopped by this one) so that it has a core of its own. @default 'in-process'
   */
  gateway?: 'in-process' | 'process';
  /** Tuning of the ribs' run seams (tests: a region heartbeat time scale); `approvalMaxWaitMs` bounds the worker's asks too. */
  ribRuns?: Pick<RibRunsWiring, 'refresh' | 'approvalMaxWaitMs'>;
}

export interface RunningMesh {
  gatewayUrl: string;
  gatewayWsUrl: string;
  temporal: { address: string; namespace: string; uiUrl?: string };
  subgraphUrls: Record<string, string>;
  projects: RunningProjects;
  runs: RunningRuns;
  memory: RunningMemory;
  sessions: RunningSessions;
  ribs: RunningRibs;
  identity: RunningIdentity;
  swarms: RunningSwarms;
  env: MeshEnv;
  /** Authentication mode, the assertion key, allowlists and limits every service runs under. */
  security: MeshSecurity;
  /**
   * The local admin token (`<KEELSON_HOME>/token`), made on first boot; null with KEELSON_AUTH=off.
   * `created` says whether this boot made it.
   */
  adminToken: { token: string; path: string; created: boolean } | null;
  /** The Temporal Schedule of memory compaction passes, or null when compaction is off. */
  compactionScheduleId: string | null;
  /** Where traces go (OTEL_EXPORTER_OTLP_*), or why there are none. */
  tracing: TracingSettings & { flush(): Promise<void> };
  /** The Temporal worker's Prometheus endpoint (KEELSON_WORKER_METRICS_PORT), or null when off. */
  workerMetricsUrl: string | null;
  /** The gateway's process when it runs in one (`gateway: 'process'`): a crash is the owner's to report. */
  gatewayProcess: GatewayProcess | null;
  /** Stops everything in reverse boot order. Idempotent. */
  stop(): Promise<void>;
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
 * Boots the whole mesh in one process: Postgres (checked, database created if missing), Temporal
 * (the given server, TEMPORAL_ADDRESS, or a file-backed dev server), every subgraph, the worker and
 * the gateway. A failure part-way stops what already started.
 */
export async function startMesh(opts: MeshOptions = {}): Promise<RunningMesh> {
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
  const stops: { name: string; stop: () => Promise<void> }[] = [];
  const stopAll = async () => {
    for (const step of stops.splice(0).reverse()) {
      progress(`stopping ${step.name}`);
      await step.stop().catch((err: unknown) => log.error({ err }, `stopping ${step.name} failed`));
    }
  };

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

  try {
    // Groups a crashed start on this home orphaned (harness CLIs, bash/script nodes) end first.
    const owned: OwnedProcessNote[] = await claimHome(home);
    for (const note of owned) progress(`Processes: ended the ${note.what} pid ${note.pid} (${note.detail ?? ''})`);

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
      if (server.previous) owned.push({ what: 'Temporal dev server', pid: server.previous.pid, outcome: server.previous.outcome, detail: dbFilename });
      if (server.previous?.outcome === 'adopted') progress(`Temporal: adopted the dev server (pid ${server.previous.pid}) an earlier start left running on ${dbFilename}`);
      if (server.previous?.outcome === 'ended') progress(`Temporal: ended the dev server (pid ${server.previous.pid}) an earlier start left on ${dbFilename}`);
      temporal = { address: server.address, namespace: server.namespace, uiUrl: server.uiUrl };
    }

    progress('Subgraphs: identity');
    const jwt = jwtSettingsFromEnv(env);
    const identity = await startIdentity({
      databaseUrl: env.DATABASE_URL,
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_IDENTITY_PORT),
      security,
      ...(jwt ? { jwt } : {}),
      adminTokenHome: home,
      auditHome: home,
      log: root.child({ service: 'identity' }),
    });
    stops.push({ name: 'identity subgraph', stop: () => identity.stop() });
    const { adminToken } = identity;
    if (adminToken?.created) progress(`Auth: made an admin token, written to ${adminToken.path} (mode 0600)`);

    progress('Subgraphs: projects');
    const projects = await startProjects({
      databaseUrl: env.DATABASE_URL,
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_PROJECTS_PORT),
      security,
      settings: projectsSettings(env, userHome, rawEnv),
      log: root.child({ service: 'projects' }),
    });
    stops.push({ name: 'projects subgraph', stop: () => projects.stop() });

    progress('Subgraphs: ribs');
    // The ribs subgraph boots first; its run seams reach the runs domain once that is up.
    const runsPort = lateRunsPort();
    // runAgentTurn / getProviders / getMemory for the ribs here, as for the worker's (memory and the
    // runs domain come up later; the seams reach them once they are).
    const late: { ribs?: RunningRibs; runs?: RunningRuns; memory?: RunningMemory } = {};
    const agentSeams = ribAgentSeams({
      env: rawEnv,
      home,
      host: () => late.ribs?.host,
      db: () => late.runs?.services.dataSource,
      memoryUrl: () => late.memory?.url,
      identity: serviceIdentity(security.assertions, 'ribs'),
      log: root.child({ service: 'ribs' }),
    });
    const ribs = await startRibs({
      databaseUrl: env.DATABASE_URL,
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_RIBS_PORT),
      security,
      settings: { ...ribsSettings(env, userHome, rawEnv), projectsUrl: projects.url },
      log: root.child({ service: 'ribs' }),
      ribHost: { ...opts.ribHost, seams: (ribId) => ({ ...agentSeams.seams(ribId), ...(opts.ribHost?.seams?.(ribId) ?? {}) }) },
      runs: {
        runs: runsPort.port,
        temporal: { address: temporal.address, namespace: temporal.namespace, taskQueue: env.TEMPORAL_TASK_QUEUE },
        heartbeatTimeoutMs: env.KEELSON_RUN_HEARTBEAT_TIMEOUT_MS,
        ...opts.ribRuns,
      },
      capabilityPollMs: env.KEELSON_CAPABILITY_POLL_MS,
    });
    late.ribs = ribs;
    stops.push({ name: 'ribs subgraph', stop: () => ribs.stop() });
    progress(`Ribs: ${ribs.host.ribIds.join(', ') || 'none active'}`);

    progress('Subgraphs: runs');
    const runs = await startRuns({
      databaseUrl: env.DATABASE_URL,
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_RUNS_PORT),
      security,
      settings: { ...runsSettings(env, { userHome, temporal, projectsUrl: projects.url }), ribWorkflows: ribWorkflowSource(ribs.host) },
      log: root.child({ service: 'runs' }),
    });
    late.runs = runs;
    stops.push({ name: 'runs subgraph', stop: () => runs.stop() });
    runsPort.attach(runs.services);

    progress('Subgraphs: sessions');
    const sessions = await startSessions({
      databaseUrl: env.DATABASE_URL,
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_SESSIONS_PORT),
      security,
      settings: harnessSettings(env, rawEnv, userHome),
      projects: projects.url,
      temporal: { address: temporal.address, namespace: temporal.namespace, taskQueue: env.TEMPORAL_TASK_QUEUE, uiUrl: temporal.uiUrl },
      heartbeatTimeoutMs: env.KEELSON_RUN_HEARTBEAT_TIMEOUT_MS,
      runsUrl: runs.url,
      capabilityPollMs: env.KEELSON_CAPABILITY_POLL_MS,
      log: root.child({ service: 'sessions' }),
    });
    stops.push({ name: 'sessions subgraph', stop: () => sessions.stop() });

    // After sessions and runs: capture reads transcripts and prompt-node turns from them by URL
    // (and memory stops before them).
    progress('Subgraphs: memory');
    const memoryLog = root.child({ service: 'memory' });
    const memory = await startMemoryService({
      databaseUrl: env.DATABASE_URL,
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_MEMORY_PORT),
      security,
      settings: memorySettings(env),
      sessionsUrl: sessions.url,
      runsUrl: runs.url,
      capabilityPollMs: env.KEELSON_CAPABILITY_POLL_MS,
      log: memoryLog,
    });
    late.memory = memory;
    stops.push({ name: 'memory subgraph', stop: () => memory.stop() });
    progress(`Memory: search is ${memory.services.mode.reason}`);

    progress('Subgraphs: swarms');
    const swarms = await startSwarms({
      databaseUrl: env.DATABASE_URL,
      host: env.KEELSON_HOST,
      port: port(env.KEELSON_SWARMS_PORT),
      security,
      settings: swarmsSettings(env, rawEnv, {
        userHome,
        temporal: { address: temporal.address, namespace: temporal.namespace, taskQueue: env.TEMPORAL_TASK_QUEUE, ...(temporal.uiUrl ? { uiUrl: temporal.uiUrl } : {}) },
        projectsUrl: projects.url,
      }),
      capabilityPollMs: env.KEELSON_CAPABILITY_POLL_MS,
      log: root.child({ service: 'swarms' }),
    });
    stops.push({ name: 'swarms subgraph', stop: () => swarms.stop() });
    // The swarm rib's operator tools (in this process's rib hosts) call this swarms subgraph.
    // As the turn's originating caller; without one (a rib's own turn, the board), read-only.
    configureSwarmOperator((caller) =>
      graphqlSwarmApi(swarms.url, caller ? callerIdentity(security.assertions, caller as Caller) : serviceIdentity(security.assertions, 'ribs', ['read'])),
    );
    stops.push({ name: 'swarm operator tools', stop: async () => configureSwarmOperator(undefined) });
    progress(`Swarms: the bus is ${swarms.bus.setup.mode === 'UNAVAILABLE' ? `unavailable (${swarms.bus.setup.reason})` : `${swarms.bus.setup.mode.toLowerCase()} at ${swarms.bus.setup.url}`}`);

    progress(`Worker: polling ${temporal.address}`);
    if (opts.worker !== false) {
      const workerLog = root.child({ service: 'worker' });
      const workerIdentity = serviceIdentity(security.assertions, 'worker');
      const activityDeps = await openActivityDeps({
        databaseUrl: env.DATABASE_URL,
        projectsUrl: projects.url,
        identity: workerIdentity,
        pg: security.pg,
        log: workerLog,
        // Prompt nodes: providers from the env and config file; rib tools through the worker's rib host,
        // which shares the ribs subgraph's project and credential ports in this process, and sends its
        // policies' asks to the operator as approval gates through the runs domain, as the ribs do.
        agentTurns: {
          env: rawEnv,
          home,
          ribHost: {
            projects: ribs.services.projects,
            credentials: ribs.services.credentials,
            approvals: workerApprovals(runsPort.port, workerLog, opts.ribRuns?.approvalMaxWaitMs),
            // Prompt nodes' memory_recall / memory_write, and the worker's ribs' getMemory.
            memory: (ribId) => graphqlMemoryTools(memory.url, workerIdentity, ribId),
            ...(opts.ribHost ? { overrides: opts.ribHost } : {}),
          },
        },
      });
      stops.push({ name: 'worker state', stop: () => activityDeps.close() });
      const swarmDeps = await openWorkerSwarmDeps(activityDeps, {
        databaseUrl: env.DATABASE_URL,
        env: rawEnv,
        home,
        pg: security.pg,
        heartbeatTimeoutMs: env.KEELSON_RUN_HEARTBEAT_TIMEOUT_MS,
        log: workerLog,
      });
      stops.push({ name: 'worker swarm state', stop: () => swarmDeps.close() });
      const worker = await startWorker({
        address: temporal.address,
        namespace: temporal.namespace,
        taskQueue: env.TEMPORAL_TASK_QUEUE,
        activities: createActivities({
          ...activityDeps.deps,
          harness: { plane: sessions.runtime.plane },
          memory: openMemoryActivityDeps({ memoryUrl: memory.url, identity: workerIdentity, env: rawEnv, home, log: workerLog }),
          swarm: swarmDeps.deps,
        }),
        workflowBundleFile: env.KEELSON_WORKFLOW_BUNDLE,
      });
      stops.push({ name: 'worker', stop: () => worker.stop() });
    }

    // Memory compaction passes, scheduled by Temporal (KEELSON_MEMORY_COMPACTION_*; interval 0: none).
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

    const subgraphUrls = { projects: projects.url, ribs: ribs.url, runs: runs.url, sessions: sessions.url, memory: memory.url, swarms: swarms.url, identity: identity.url };
    let gatewayProcess: GatewayProcess | null = null;
    let gateway: { url: string; wsUrl: string };
    if (opts.gateway === 'process') {
      progress('Gateway: in a process of its own');
      const child = await startGatewayProcess({ env: rawEnv, host: env.KEELSON_HOST, port: port(env.KEELSON_GATEWAY_PORT), subgraphUrls });
      stops.push({ name: 'gateway process', stop: () => child.stop() });
      gatewayProcess = child;
      gateway = child;
    } else {
      progress('Gateway');
      const inProcess = await startGateway({
        supergraphSdl: await readFile(supergraphPath(), 'utf8'),
        host: env.KEELSON_HOST,
        port: port(env.KEELSON_GATEWAY_PORT),
        security,
        subgraphUrls,
        ...(security.auth === 'on' ? { credentials: identity.identity.authenticator } : {}),
        subscriptions: subscriptionLimitsFromEnv(env),
        ...(await tlsOptions(env)),
        log: root.child({ service: 'gateway' }),
      });
      stops.push({ name: 'gateway', stop: () => inProcess.stop() });
      gateway = inProcess;
    }

    if (opts.proof) {
      const client = await connectClient({ address: temporal.address, namespace: temporal.namespace });
      try {
        const handle = await startEcho(client, 'keelson mesh is up', { taskQueue: env.TEMPORAL_TASK_QUEUE });
        const result = await handle.result();
        progress(`Temporal: proof workflow ${handle.workflowId} answered "${result.echoed}"`);
      } finally {
        await client.connection.close();
      }
    }

    // What this start adopted or ended, for `npm run doctor`.
    await recordStart(home, owned).catch((err: unknown) => log.warn({ err }, 'could not record the start'));

    let stopping: Promise<void> | undefined;
    return {
      gatewayUrl: gateway.url,
      gatewayWsUrl: gateway.wsUrl,
      temporal,
      subgraphUrls,
      projects,
      runs,
      memory,
      sessions,
      ribs,
      identity,
      swarms,
      env,
      security,
      adminToken,
      compactionScheduleId: compaction,
      tracing: { ...tracing.settings, flush: () => tracing.flush() },
      workerMetricsUrl,
      gatewayProcess,
      stop: () => (stopping ??= stopAll()),
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
