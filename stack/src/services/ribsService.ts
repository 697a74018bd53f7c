import { isLoopback, parseEnv } from '@keelson/schema';
import { serviceIdentity, type Logger } from '@keelson/service';
import { loadRibsConfig, startRibsSubgraph as startRibs, type RibHostOverrides, type RibRunsWiring, type RibsConfig, type RunningRibs } from '@keelson/subgraph-ribs';
import { openRunsServices } from '@keelson/subgraph-runs';
import { ribAgentSeams } from '../ribAgentSeams';
import { lateRunsPort, ribWorkflowSource, runsSettings, type RunsSettings } from '@keelson/runs';

export interface RibsServiceConfig extends RibsConfig {
  /** The runs domain the run seams reach, opened in this process over the same Postgres and Temporal. */
  runs: RunsSettings;
  /** The memory subgraph a rib's `getMemory()` reads and writes (KEELSON_MEMORY_URL, else the port on this host). */
  memoryUrl: string;
}

/** The ribs service's configuration: the ribs subgraph's, plus the runs domain's (TEMPORAL_ADDRESS is required). */
export function loadRibsServiceConfig(env: NodeJS.ProcessEnv = process.env): RibsServiceConfig {
  const e = parseEnv(env);
  const host = isLoopback(e.KEELSON_HOST) || e.KEELSON_HOST === '0.0.0.0' || e.KEELSON_HOST === '::' ? '127.0.0.1' : e.KEELSON_HOST;
  return { ...loadRibsConfig(env), runs: runsSettings(e), memoryUrl: e.KEELSON_MEMORY_URL ?? `http://${host}:${e.KEELSON_MEMORY_PORT}/graphql` };
}

export interface StartRibsServiceOptions extends RibsServiceConfig {
  log: Logger;
  /** Passed to the rib host (tests: an explicit `available` map of ribs). */
  ribHost?: RibHostOverrides;
  /** Tuning of the run seams (tests: a region heartbeat time scale, or none). */
  ribRuns?: Pick<RibRunsWiring, 'refresh' | 'approvalMaxWaitMs'>;
}

/**
 * The ribs service as its own process (docker-compose `ribs`): the ribs subgraph, its run seams
 * reaching the runs domain's services opened in this process (same database, same Temporal, no
 * second GraphQL server), whose catalog reads this process's rib host. Its ribs also get
 * `runAgentTurn`, `getProviders` (this process's own provider registry) and `getMemory` (over the
 * memory subgraph), as the worker's ribs do. Stopping stops the ribs subgraph (its held ops settle),
 * then closes the runs domain.
 */
export async function startRibsService(opts: StartRibsServiceOptions): Promise<RunningRibs> {
  const { runs: settings, ribHost, ribRuns: tuning, memoryUrl, ...config } = opts;
  const runsPort = lateRunsPort();
  let domain: Awaited<ReturnType<typeof openRunsServices>> | undefined;
  const late: { ribs?: RunningRibs } = {};
  const agent = ribAgentSeams({
    env: config.settings.env,
    home: config.settings.home,
    host: () => late.ribs?.host,
    db: () => domain?.services.dataSource,
    memoryUrl,
    identity: serviceIdentity(config.security.assertions, 'ribs'),
    log: config.log,
  });
  const ribs = await startRibs({
    ...config,
    ribHost: { ...ribHost, seams: (ribId) => ({ ...agent.seams(ribId), ...(ribHost?.seams?.(ribId) ?? {}) }) },
    runs: { runs: runsPort.port, temporal: settings.temporal, heartbeatTimeoutMs: settings.heartbeatTimeoutMs, ...tuning },
  });
  late.ribs = ribs;
  try {
    domain = await openRunsServices({
      databaseUrl: config.databaseUrl,
      settings: { ...settings, ribWorkflows: ribWorkflowSource(ribs.host) },
      identity: serviceIdentity(config.security.assertions, 'ribs'),
      pg: config.security.pg,
      log: config.log.child({ component: 'runs-domain' }),
    });
    runsPort.attach(domain.services);
    const opened = domain;
    let stopping: Promise<void> | undefined;
    return { ...ribs, stop: () => (stopping ??= ribs.stop().finally(() => opened.close())) };
  } catch (err) {
    await ribs.stop();
    throw err;
  }
}
