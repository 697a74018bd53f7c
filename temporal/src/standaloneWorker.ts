import { graphqlMemoryTools } from '@keelson/host';
import { homedir } from 'node:os';
import type { ApprovalPort, CredentialStore, ProjectsPort } from '@keelson/host';
import { keelsonHome, parseEnv, type MeshEnv } from '@keelson/schema';
import { meshSecurityFromEnv, serviceIdentity, type Logger, type MeshSecurity, type ServiceIdentity } from '@keelson/service';
import { createActivities } from './activities';
import { connectClient } from './client';
import { ensureCompactionSchedule } from './compactionSchedule';
import { openHarnessActivityDeps } from './harnessDeps';
import { openMemoryActivityDeps } from './memoryDeps';
import { openWorkerSwarmDeps } from './swarmDeps';
import type { WorkerRibHostOptions } from './ribHostForWorker';
import { configureTemporalRuntime } from './runtime';
import { startWorker } from './worker';
import { openActivityDeps } from './workerDeps';

export interface StandaloneWorkerConfig {
  logLevel: MeshEnv['KEELSON_LOG_LEVEL'];
  /** The parsed environment; TEMPORAL_ADDRESS is set. */
  env: MeshEnv & { TEMPORAL_ADDRESS: string };
  /** What the worker's rib host, providers and harness CLIs read (KEELSON_RIBS, grants, provider keys). */
  rawEnv: Record<string, string | undefined>;
  /** The Keelson home (KEELSON_HOME, else ~/.keelson). */
  home: string;
  /** The assertion key (the worker calls the projects and memory subgraphs as `service:worker`) and Postgres bounds. */
  security: MeshSecurity;
}

/** The worker process's configuration. TEMPORAL_ADDRESS is required (npm start runs the worker in-process). */
export function loadStandaloneWorkerConfig(rawEnv: NodeJS.ProcessEnv = process.env): StandaloneWorkerConfig {
  const env = parseEnv(rawEnv);
  const address = env.TEMPORAL_ADDRESS;
  if (!address) throw new Error('TEMPORAL_ADDRESS is required to run the worker on its own (npm start runs it in-process)');
  return {
    logLevel: env.KEELSON_LOG_LEVEL,
    env: { ...env, TEMPORAL_ADDRESS: address },
    rawEnv,
    home: keelsonHome(env, homedir()),
    security: meshSecurityFromEnv(env),
  };
}

export interface StartStandaloneWorkerOptions extends StandaloneWorkerConfig {
  log: Logger;
  /**
   * Where a policy `ask` about a prompt node's tool goes (the stack's worker service passes the runs
   * domain's approval gates). Absent: such an ask denies, and a warning says so at boot.
   */
  approvals?: ApprovalPort;
  /** Passed to the worker's rib host (tests: an explicit `available` map of ribs). */
  ribHost?: WorkerRibHostOptions['overrides'];
  /** Ports the worker's rib host shares with the composing process. */
  projects?: ProjectsPort;
  credentials?: CredentialStore;
}

export interface RunningStandaloneWorker {
  /** Drains the worker, then closes its state. Idempotent. */
  stop(): Promise<void>;
}

/**
 * The worker as its own process: DATABASE_URL holds run and op state; the projects subgraph
 * (KEELSON_PROJECTS_URL, else its local port) leases worktrees; memory compaction reads and writes
 * through the memory subgraph (KEELSON_MEMORY_URL, else its local port), and this worker owns its
 * Schedule (created, updated or removed to match the env). Logs `worker polling` once it polls.
 */
export async function startStandaloneWorker(opts: StartStandaloneWorkerOptions): Promise<RunningStandaloneWorker> {
  const { env, rawEnv, home, log } = opts;
  const identity: ServiceIdentity = serviceIdentity(opts.security.assertions, 'worker');
  const metricsAddress = env.KEELSON_WORKER_METRICS_PORT > 0 ? `${env.KEELSON_HOST}:${env.KEELSON_WORKER_METRICS_PORT}` : undefined;
  configureTemporalRuntime(env.KEELSON_LOG_LEVEL === 'debug' ? 'info' : 'warn', { log, ...(metricsAddress ? { metricsAddress } : {}) });
  if (metricsAddress) log.info({ url: `http://${metricsAddress}/metrics` }, 'worker metrics (Prometheus)');
  const memoryUrl = env.KEELSON_MEMORY_URL ?? `http://127.0.0.1:${env.KEELSON_MEMORY_PORT}/graphql`;
  const opened = await openActivityDeps({
    databaseUrl: env.DATABASE_URL,
    env: rawEnv,
    projectsUrl: env.KEELSON_PROJECTS_URL ?? `http://127.0.0.1:${env.KEELSON_PROJECTS_PORT}/graphql`,
    identity,
    pg: opts.security.pg,
    log,
    agentTurns: {
      env: rawEnv,
      home,
      ribHost: {
        ...(opts.approvals ? { approvals: opts.approvals } : {}),
        ...(opts.ribHost ? { overrides: opts.ribHost } : {}),
        ...(opts.projects ? { projects: opts.projects } : {}),
        ...(opts.credentials ? { credentials: opts.credentials } : {}),
        // Prompt nodes' memory_recall / memory_write, and the worker's ribs' getMemory: the memory subgraph.
        memory: (ribId) => graphqlMemoryTools(memoryUrl, identity, ribId),
      },
    },
  });
  const harness = openHarnessActivityDeps(env, rawEnv, log, identity);
  let closeSwarm = async () => {};
  const closeState = () => closeSwarm().then(() => opened.close()).then(() => harness.close());
  try {
    const swarm = await openWorkerSwarmDeps(opened, {
      databaseUrl: env.DATABASE_URL,
      env: rawEnv,
      home,
      pg: opts.security.pg,
      heartbeatTimeoutMs: env.KEELSON_RUN_HEARTBEAT_TIMEOUT_MS,
      log,
    });
    closeSwarm = () => swarm.close();
    const memory = openMemoryActivityDeps({ memoryUrl, identity, env: rawEnv, home, log });
    const worker = await startWorker({
      address: env.TEMPORAL_ADDRESS,
      namespace: env.TEMPORAL_NAMESPACE,
      taskQueue: env.TEMPORAL_TASK_QUEUE,
      activities: createActivities({ ...opened.deps, harness: harness.deps, memory, swarm: swarm.deps }),
      workflowBundleFile: env.KEELSON_WORKFLOW_BUNDLE,
    });
    try {
      const client = await connectClient({ address: env.TEMPORAL_ADDRESS, namespace: env.TEMPORAL_NAMESPACE });
      try {
        await ensureCompactionSchedule(client, {
          taskQueue: env.TEMPORAL_TASK_QUEUE,
          intervalMs: env.KEELSON_MEMORY_COMPACTION_INTERVAL_MS,
          input: { window: env.KEELSON_MEMORY_COMPACTION_WINDOW, modelClass: 'fast' },
        });
      } finally {
        await client.connection.close();
      }
    } catch (err) {
      await worker.stop();
      throw err;
    }
    log.info({ address: env.TEMPORAL_ADDRESS, taskQueue: env.TEMPORAL_TASK_QUEUE, pid: process.pid }, 'worker polling');
    let stopping: Promise<void> | undefined;
    return { stop: () => (stopping ??= worker.stop().then(closeState)) };
  } catch (err) {
    await closeState();
    throw err;
  }
}
