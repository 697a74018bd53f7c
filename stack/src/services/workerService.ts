import { homedir } from 'node:os';
import { keelsonHome, parseEnv } from '@keelson/schema';
import { serviceIdentity } from '@keelson/service';
import { runsPortOf, runsSettings, workerApprovals, type RunsSettings } from '@keelson/runs';
import { openRunsServices } from '@keelson/subgraph-runs';
import {
  loadStandaloneWorkerConfig,
  startStandaloneWorker,
  type RunningStandaloneWorker,
  type StandaloneWorkerConfig,
  type StartStandaloneWorkerOptions,
} from '@keelson/temporal';
import { claimHome } from '../ownership';

export interface WorkerServiceConfig extends StandaloneWorkerConfig {
  /** The runs domain the approval gates open in, in this process over the same Postgres and Temporal. */
  runs: RunsSettings;
}

/** The worker service's configuration: the worker's, plus the runs domain's (TEMPORAL_ADDRESS is required). */
export function loadWorkerServiceConfig(env: NodeJS.ProcessEnv = process.env): WorkerServiceConfig {
  return { ...loadStandaloneWorkerConfig(env), runs: runsSettings(parseEnv(env)) };
}

export interface StartWorkerServiceOptions extends WorkerServiceConfig, Pick<StartStandaloneWorkerOptions, 'log' | 'ribHost'> {
  /** How long a policy `ask` waits for the operator (tests). @default 300000 */
  approvalMaxWaitMs?: number;
}

/**
 * The worker as its own process (docker-compose `worker`, and the tests that kill it): the Temporal
 * worker, whose rib host sends a policy `ask` about a prompt node's tool to the operator as a
 * `policy-approval` gate, started through the runs domain's services opened in this process (same
 * database, same Temporal, no GraphQL server). Stopping drains the worker, then closes the runs domain.
 */
export async function startWorkerService(opts: StartWorkerServiceOptions): Promise<RunningStandaloneWorker> {
  const { runs: settings, approvalMaxWaitMs, ...config } = opts;
  // Its bash/script node and CLI groups carry the home; those a crashed worker orphaned end now.
  const ended = await claimHome(keelsonHome(config.env, homedir()));
  for (const note of ended) config.log.warn({ pid: note.pid, detail: note.detail }, `ended an orphaned ${note.what}`);
  const domain = await openRunsServices({
    databaseUrl: config.env.DATABASE_URL,
    settings,
    identity: serviceIdentity(config.security.assertions, 'worker'),
    pg: config.security.pg,
    log: config.log.child({ component: 'runs-domain' }),
  });
  try {
    const port = runsPortOf(domain.services);
    const worker = await startStandaloneWorker({ ...config, approvals: workerApprovals(() => port, config.log, approvalMaxWaitMs) });
    let stopping: Promise<void> | undefined;
    return { stop: () => (stopping ??= worker.stop().finally(() => domain.close())) };
  } catch (err) {
    await domain.close();
    throw err;
  }
}
