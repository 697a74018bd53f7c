import type { GatewayProcess } from './gatewayProcess';
import type { MeshEnv } from '@keelson/schema';
import type { Logger, MeshSecurity, TracingSettings } from '@keelson/service';
import type { RunningIdentity } from '@keelson/subgraph-identity';
import type { RunningMemory } from '@keelson/subgraph-memory';
import type { RunningProjects } from '@keelson/subgraph-projects';
import type { RibHostOverrides, RibRunsWiring, RunningRibs } from '@keelson/subgraph-ribs';
import type { RunningRuns } from '@keelson/subgraph-runs';
import type { RunningSessions } from '@keelson/subgraph-sessions';
import type { RunningSwarms } from '@keelson/subgraph-swarms';
import { ensureDatabase } from './database';
import { bootCompaction, bootGateway, bootTemporal, meshBootOf, runMeshProof, startMeshTelemetry, stopMeshSteps } from './meshBoot';
import { bootIdentity, bootMemory, bootProjects, bootRibs, bootRuns, bootSessions, bootSwarms, bootWorker } from './meshServices';
import { claimHome, recordStart, type OwnedProcessNote } from './ownership';

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

/**
 * Boots the whole mesh in one process: Postgres (checked, database created if missing), Temporal
 * (the given server, TEMPORAL_ADDRESS, or a file-backed dev server), every subgraph, the worker and
 * the gateway. A failure part-way stops what already started.
 */
export async function startMesh(opts: MeshOptions = {}): Promise<RunningMesh> {
  const boot = meshBootOf(opts);
  const { env, log, security, progress, home } = boot;
  const stopAll = () => stopMeshSteps(boot);
  const { tracing, workerMetricsUrl } = startMeshTelemetry(boot);

  try {
    // Groups a crashed start on this home orphaned (harness CLIs, bash/script nodes) end first.
    const owned: OwnedProcessNote[] = await claimHome(home);
    for (const note of owned) progress(`Processes: ended the ${note.what} pid ${note.pid} (${note.detail ?? ''})`);

    progress(`Postgres: checking ${new URL(env.DATABASE_URL).host}`);
    const db = await ensureDatabase(env.DATABASE_URL);
    if (db.created) progress(`Postgres: created database ${new URL(env.DATABASE_URL).pathname.slice(1)}`);

    const temporal = await bootTemporal(boot, owned);
    const identity = await bootIdentity(boot);
    const { adminToken } = identity;
    const projects = await bootProjects(boot);
    const ribsBoot = await bootRibs(boot, temporal, projects);
    const { ribs, runsPort, late } = ribsBoot;
    const runs = await bootRuns(boot, temporal, projects, ribsBoot);
    const sessions = await bootSessions(boot, temporal, projects, runs);
    const memory = await bootMemory(boot, sessions, runs, late);
    const swarms = await bootSwarms(boot, temporal, projects);

    progress(`Worker: polling ${temporal.address}`);
    if (opts.worker !== false) await bootWorker(boot, temporal, { projects, ribs, runsPort, sessions, memory });

    const compaction = await bootCompaction(boot, temporal);

    const subgraphUrls = { projects: projects.url, ribs: ribs.url, runs: runs.url, sessions: sessions.url, memory: memory.url, swarms: swarms.url, identity: identity.url };
    const { gateway, gatewayProcess } = await bootGateway(boot, subgraphUrls, identity);

    if (opts.proof) await runMeshProof(boot, temporal);

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
