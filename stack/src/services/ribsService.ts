import { parseEnv } from '@keelson/schema';
import { serviceIdentity, type Logger } from '@keelson/service';
import { loadRibsConfig, start as startRibs, type RibHostOverrides, type RibsConfig, type RunningRibs } from '@keelson/subgraph-ribs';
import { openRunsServices, runsSettings, type RunsSettings } from '@keelson/subgraph-runs';
import { lateRibRuns, ribWorkflowSource, type RibRunsOptions } from '../ribRuns';

export interface RibsServiceConfig extends RibsConfig {
  /** The runs domain the run seams reach, opened in this process over the same Postgres and Temporal. */
  runs: RunsSettings;
}

/** The ribs service's configuration: the ribs subgraph's, plus the runs domain's (TEMPORAL_ADDRESS is required). */
export function loadRibsServiceConfig(env: NodeJS.ProcessEnv = process.env): RibsServiceConfig {
  return { ...loadRibsConfig(env), runs: runsSettings(parseEnv(env)) };
}

export interface StartRibsServiceOptions extends RibsServiceConfig {
  log: Logger;
  /** Passed to the rib host (tests: an explicit `available` map of ribs). */
  ribHost?: RibHostOverrides;
  /** Tuning of the run seams (tests: a region heartbeat time scale, or none). */
  ribRuns?: RibRunsOptions['tuning'];
}

/**
 * The ribs service as its own process (docker-compose `ribs`): the ribs subgraph, its run seams
 * reaching the runs domain's services opened in this process (same database, same Temporal, no
 * second GraphQL server), whose catalog reads this process's rib host. Stopping stops the ribs
 * subgraph (its held ops settle), then closes the runs domain.
 */
export async function startRibsService(opts: StartRibsServiceOptions): Promise<RunningRibs> {
  const { runs: settings, ribHost, ribRuns: tuning, ...config } = opts;
  const seams = lateRibRuns({ temporal: settings.temporal, heartbeatTimeoutMs: settings.heartbeatTimeoutMs, tuning });
  const ribs = await startRibs({ ...config, ...(ribHost ? { ribHost } : {}), runs: seams.wiring });
  try {
    const domain = await openRunsServices({
      databaseUrl: config.databaseUrl,
      settings: { ...settings, ribWorkflows: ribWorkflowSource(ribs.host) },
      identity: serviceIdentity(config.security.assertions, 'ribs'),
      pg: config.security.pg,
      log: config.log.child({ component: 'runs-domain' }),
    });
    seams.attach(domain.services);
    let stopping: Promise<void> | undefined;
    return { ...ribs, stop: () => (stopping ??= ribs.stop().finally(() => domain.close())) };
  } catch (err) {
    await ribs.stop();
    throw err;
  }
}
