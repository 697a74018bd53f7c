import type { Logger } from '@keelson/service';
import { loadRunsConfig, startRunsSubgraph as startRuns, type RunningRuns, type RunsConfig } from '@keelson/subgraph-runs';
import { lazyWorkerRibHost, type WorkerRibHostOptions } from '@keelson/temporal';
import { ribWorkflowSource } from '@keelson/runs';

export interface RunsServiceConfig extends RunsConfig {
  /** What this process's rib host reads: KEELSON_RIBS, the grant variables, what rib processes inherit. */
  ribEnv: Record<string, string | undefined>;
}

/** The runs service's configuration: the runs subgraph's, plus the environment its rib host sees. */
export function loadRunsServiceConfig(env: NodeJS.ProcessEnv = process.env): RunsServiceConfig {
  return { ...loadRunsConfig(env), ribEnv: env };
}

export interface StartRunsServiceOptions extends RunsServiceConfig {
  log: Logger;
  /** Passed to the rib host (tests: an explicit `available` map of ribs). */
  ribHost?: WorkerRibHostOptions['overrides'];
}

/**
 * The runs service as its own process (docker-compose `runs`): the runs subgraph, its catalog's rib
 * scope read from a rib host of this process, the worker's kind, activated on the first catalog read.
 * That host only lists workflows: its snapshots stay in memory, and it has no project, credential or
 * run seams and no run-event consumer or region heartbeat, so a second activation of the same ribs
 * publishes, starts and holds nothing (the ribs process does).
 */
export async function startRunsService(opts: StartRunsServiceOptions): Promise<RunningRuns> {
  const { ribEnv, ribHost: overrides, ...config } = opts;
  const ribHost = lazyWorkerRibHost({ env: ribEnv, home: config.settings.keelsonHome, log: config.log, ...(overrides ? { overrides } : {}) });
  try {
    const runs = await startRuns({ ...config, settings: { ...config.settings, ribWorkflows: ribWorkflowSource(() => ribHost.get()) } });
    let stopping: Promise<void> | undefined;
    return { ...runs, stop: () => (stopping ??= runs.stop().finally(() => ribHost.dispose())) };
  } catch (err) {
    await ribHost.dispose();
    throw err;
  }
}
