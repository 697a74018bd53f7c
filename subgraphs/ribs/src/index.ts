import { openDomainState, AuditLog, type DomainState } from '@keelson/platform';
import { CapabilityWatcher } from '@keelson/operator';
import { createExec, createRibHost, type RibHost, type RibHostOptions } from '@keelson/host';
import { serveDomain, type SubgraphStartOptions } from '@keelson/kit';
import { serviceIdentity } from '@keelson/service';
import type { RibsServices } from './context';
import { StoredCredential } from './credential/credential.entity';
import { loadCredentialKey } from './credential/credentialKey';
import { PgCredentialStore } from './credential/pgCredentialStore';
import { execWithEnv } from './exec';
import { ManifestNudges } from './manifest/manifestNudges';
import { RibsTables1764460800200 } from './migrations/1764460800200-RibsTables';
import { RibStreamCursors1764460800210 } from './migrations/1764460800210-RibStreamCursors';
import { RibCursorsToPlatform1764460800220 } from './migrations/1764460800220-RibCursorsToPlatform';
import { GraphqlProjectsPort } from './projects/graphqlProjectsPort';
import { RibRuntime, type RibRunsWiring } from './runs/ribRuntime';
import { MCP_PATH } from '@keelson/schema';
import { mcpEndpoint } from './mcp/mcpEndpoint';
import { buildRibsSchema } from './schema';
import type { RibsSettings } from './settings';
import { openChats } from './chat/openChats';
import type { OpenedChatsDomain } from '@keelson/chats';
import { PgSnapshotStore } from './snapshot/pgSnapshotStore';
import { SnapshotHead, SnapshotVersion } from './snapshot/snapshot.entity';

export { buildRibsSchema } from './schema';
export { loadRibsConfig, ribsSettings } from './config';
export type { RibsConfig } from './config';
export type { RibsSettings } from './settings';
export type { RibsServices } from './context';
export { PgSnapshotStore, DEFAULT_RETAINED_VERSIONS } from './snapshot/pgSnapshotStore';
export { SnapshotFrameStream } from './snapshot/snapshotFrames';
export { PgCredentialStore, seal, open } from './credential/pgCredentialStore';
export type { CredentialInfo } from './credential/pgCredentialStore';
export { loadCredentialKey, decodeKey, CREDENTIALS_KEY_FILE } from './credential/credentialKey';
export type { CredentialKey } from './credential/credentialKey';
export { GraphqlProjectsPort, statusForCode } from './projects/graphqlProjectsPort';
export type { GraphqlProjectsPortOptions } from './projects/graphqlProjectsPort';
export { ManifestNudges } from './manifest/manifestNudges';
export { mcpEndpoint, mcpServerFor, MCP_SERVER_NAME } from './mcp/mcpEndpoint';
export { toolScope } from './mcp/mcpTools';
export { RibRuntime } from './runs/ribRuntime';
export type { RibRunsWiring, RibRuntimeStart } from './runs/ribRuntime';
export { LiveKeys } from './runs/liveKeys';
export { RunEventConsumer } from './runs/runEventConsumer';
export { RefreshDriver } from './runs/refreshDriver';
export type { RegionPlan } from './runs/refreshDriver';

export const ribsEntities = [SnapshotHead, SnapshotVersion, StoredCredential];
export const ribsMigrations = [RibsTables1764460800200, RibStreamCursors1764460800210, RibCursorsToPlatform1764460800220];

/** Host options a caller may set beyond the ports this subgraph wires (tests pass `available`). */
export type RibHostOverrides = Omit<RibHostOptions, 'snapshotStore' | 'credentials' | 'projects' | 'exec' | 'home' | 'logger'>;

export interface StartRibsOptions extends SubgraphStartOptions {
  settings: RibsSettings;
  /** Passed to `createRibHost` (discovery roots, an explicit `available` map, run seams, …). */
  ribHost?: RibHostOverrides;
  /** How long boot waits for the projects subgraph's first answer before serving 503 from the project seams. @default 5000 */
  projectsStartTimeoutMs?: number;
  /**
   * The run seams (startWorkflow, registerOp, onRunEvent, …), the `run_*` tools, policy asks as
   * approval gates and the region heartbeat. Absent, ribs get none of them (they fail closed).
   */
  runs?: RibRunsWiring;
  /** How often the active ribs are compared for capabilitiesChanged. @default 10000 */
  capabilityPollMs?: number;
}

export interface RunningRibs {
  url: string;
  wsUrl: string;
  /** The rib host (in-process callers and tests). */
  host: RibHost;
  services: RibsServices;
  /** SQL statements sent so far. */
  queryCount(): number;
  stop(): Promise<void>;
}

/**
 * Creates the rib host over this subgraph's ports: discovery, validation and registration of the
 * ribs, the processes they run ended through `signal` (aborted at teardown). A broken activation
 * rule fails the start.
 */
async function activateRibHost(
  opts: StartRibsOptions,
  runtime: RibRuntime | undefined,
  ports: { snapshots: PgSnapshotStore; credentials: PgCredentialStore; projects: GraphqlProjectsPort; audit: AuditLog },
  signal: AbortSignal,
): Promise<RibHost> {
  try {
    return await createRibHost({
      env: opts.settings.env,
      ...opts.ribHost,
      ...(runtime ? runtime.hostOptions(opts.ribHost) : {}),
      home: opts.settings.home,
      logger: opts.log.child({ component: 'rib-host' }),
      snapshotStore: ports.snapshots,
      credentials: ports.credentials,
      projects: ports.projects,
      exec: execWithEnv(createExec({ signal }), opts.settings.env),
      audit: ports.audit,
    });
  } catch (err) {
    throw new Error(`the ribs subgraph cannot start: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * capabilitiesChanged: the active ribs as ribManifest lists them, compared here (a rib left out of
 * this boot's activation is reported deactivated). Not started.
 */
function activeRibsWatcher(opts: StartRibsOptions, state: DomainState, active: RibHost): CapabilityWatcher {
  return new CapabilityWatcher({
    dataSource: state.dataSource,
    events: state.events,
    source: 'RIB',
    intervalMs: opts.capabilityPollMs,
    log: opts.log,
    complete: { reason: 'not active in the ribs service (not installed, filtered out, or its activation failed)' },
    observe: async () => active.ribIds.map((id) => ({ id, available: true, state: { active: true }, reason: null })),
  });
}

/**
 * Boots the ribs subgraph: migrate, follow the projects subgraph, activate the ribs (discovery,
 * validation, registration; an activation rule broken fails this start), then serve. Stopping
 * awaits every rib's `dispose` before the database closes.
 */
export async function startRibsSubgraph(opts: StartRibsOptions): Promise<RunningRibs> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: ribsEntities,
    migrations: ribsMigrations,
    migrationsTableName: 'ribs_migrations',
    log: opts.log,
    pg: opts.security.pg,
    listenerName: 'keelson-ribs-listener',
  });
  const { dataSource, queries, notifier, events } = state;
  // Mutations this subgraph answers and the rib tools its host runs (MCP calls, rib actions).
  const audit = new AuditLog(dataSource, opts.log, 'ribs');
  const projects = new GraphqlProjectsPort({
    url: opts.settings.projectsUrl,
    identity: serviceIdentity(opts.security.assertions, 'ribs'),
    log: opts.log.child({ component: 'projects-port' }),
    startTimeoutMs: opts.projectsStartTimeoutMs,
  });
  const lifetime = new AbortController();
  let host: RibHost | undefined;
  let nudges: ManifestNudges | undefined;
  const runtime = opts.runs ? new RibRuntime(opts.runs, { home: opts.settings.home, log: opts.log.child({ component: 'rib-runs' }) }) : undefined;
  let watcher: CapabilityWatcher | undefined;
  let chats: OpenedChatsDomain | undefined;
  const teardown = async () => {
    await watcher?.stop();
    await chats?.close();
    await runtime?.stop();
    await nudges?.stop();
    await host?.dispose();
    lifetime.abort();
    await projects.stop();
    await audit.flush();
    await state.close();
  };
  try {
    const snapshots = new PgSnapshotStore(dataSource, events);
    const credentials = new PgCredentialStore(dataSource, () => loadCredentialKey({ envKey: opts.settings.credentialsKey, home: opts.settings.home }));
    await projects.start();
    host = await activateRibHost(opts, runtime, { snapshots, credentials, projects, audit }, lifetime.signal);
    nudges = new ManifestNudges(dataSource, events, opts.log);
    nudges.attach(host);
    await runtime?.start({ host, dataSource, events, notifier, projectName: (id) => projects.getProjects().find((p) => p.id === id)?.name });
    // Chats (seed 000's chat surface) run on Temporal too: served where the runs wiring is.
    const chatHost = host;
    if (opts.runs) chats = await openChats({ databaseUrl: opts.databaseUrl, wiring: opts.runs, host: () => chatHost, pg: opts.security.pg, log: opts.log.child({ component: 'chats' }) });
    const services: RibsServices = {
      host,
      snapshots,
      credentials,
      projects,
      manifest: nudges,
      events,
      ...(runtime ? { runtime, liveKeys: runtime.liveKeys } : {}),
      ...(chats ? { chats: chats.services } : {}),
    };
    const { schema } = await buildRibsSchema();
    const mcp = mcpEndpoint({ host, log: opts.log.child({ component: 'mcp' }) });
    const served = await serveDomain('ribs', { ...opts, audit }, schema, services, teardown, { [MCP_PATH]: mcp });
    opts.log.info({ ribs: host.ribIds, projectsUrl: opts.settings.projectsUrl }, 'ribs active');
    watcher = activeRibsWatcher(opts, state, host).start();
    return { url: served.url, wsUrl: served.wsUrl, host, services, queryCount: () => queries.count, stop: served.stop };
  } catch (err) {
    await teardown();
    throw err;
  }
}
