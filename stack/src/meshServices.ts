import { graphqlMemoryTools } from '@keelson/host';
import { jwtSettingsFromEnv } from '@keelson/identity';
import type { Caller } from '@keelson/schema';
import { callerIdentity, serviceIdentity } from '@keelson/service';
import { startIdentitySubgraph as startIdentity, type RunningIdentity } from '@keelson/subgraph-identity';
import { memorySettings, type RunningMemory } from '@keelson/subgraph-memory';
import { projectsSettings, startProjectsSubgraph as startProjects, type RunningProjects } from '@keelson/subgraph-projects';
import { ribsSettings, startRibsSubgraph as startRibs, type RunningRibs } from '@keelson/subgraph-ribs';
import { startRunsSubgraph as startRuns, type RunningRuns } from '@keelson/subgraph-runs';
import { startSessionsSubgraph as startSessions, type RunningSessions } from '@keelson/subgraph-sessions';
import { configureSwarmOperator, graphqlSwarmApi } from '@keelson/rib-swarm';
import { startSwarmsSubgraph as startSwarms, swarmsSettings, type RunningSwarms } from '@keelson/subgraph-swarms';
import { harnessSettings } from '@keelson/harness';
import { createActivities, openActivityDeps, openMemoryActivityDeps, openWorkerSwarmDeps, startWorker } from '@keelson/temporal';
import { lateRunsPort, ribWorkflowSource, runsSettings, workerApprovals } from '@keelson/runs';
import type { MeshBoot } from './meshBoot';
import { ribAgentSeams } from './ribAgentSeams';
import { startMemoryService } from './services/memoryService';
import type { RunningMesh } from './startMesh';

type MeshTemporal = RunningMesh['temporal'];

/** The runs domain's port, handed to the ribs before the runs subgraph is up. */
type LateRunsPort = ReturnType<typeof lateRunsPort>;

/** Services the ribs' agent seams reach once they are up (they boot after the ribs subgraph). */
interface LateServices {
  ribs?: RunningRibs;
  runs?: RunningRuns;
  memory?: RunningMemory;
}

/** The identity subgraph (API tokens, the admin token on first boot, JWTs when configured). */
export async function bootIdentity(boot: MeshBoot): Promise<RunningIdentity> {
  const { env, root, progress, home, stops } = boot;
  progress('Subgraphs: identity');
  const jwt = jwtSettingsFromEnv(env);
  const identity = await startIdentity({
    ...subgraphBase(boot, boot.env.KEELSON_IDENTITY_PORT),
    ...(jwt ? { jwt } : {}),
    adminTokenHome: home,
    auditHome: home,
    log: root.child({ service: 'identity' }),
  });
  stops.push({ name: 'identity subgraph', stop: () => identity.stop() });
  const { adminToken } = identity;
  if (adminToken?.created) progress(`Auth: made an admin token, written to ${adminToken.path} (mode 0600)`);
  return identity;
}

/** What every subgraph of the mesh starts with: the database, the host, its port and the security settings. */
function subgraphBase(boot: MeshBoot, portSetting: number) {
  return { databaseUrl: boot.env.DATABASE_URL, host: boot.env.KEELSON_HOST, port: boot.port(portSetting), security: boot.security };
}

/** The projects subgraph. */
export async function bootProjects(boot: MeshBoot): Promise<RunningProjects> {
  const { rawEnv, env, root, progress, userHome, stops } = boot;
  progress('Subgraphs: projects');
  const projects = await startProjects({
    ...subgraphBase(boot, boot.env.KEELSON_PROJECTS_PORT),
    settings: projectsSettings(env, userHome, rawEnv),
    log: root.child({ service: 'projects' }),
  });
  stops.push({ name: 'projects subgraph', stop: () => projects.stop() });
  return projects;
}

/**
 * The ribs subgraph, first of the services its seams reach: its run seams reach the runs domain
 * through `runsPort`, its agent seams memory and the runs domain through `late`, once those are up.
 */
export async function bootRibs(
  boot: MeshBoot,
  temporal: MeshTemporal,
  projects: RunningProjects,
): Promise<{ ribs: RunningRibs; runsPort: LateRunsPort; late: LateServices }> {
  const { opts, rawEnv, env, root, security, progress, userHome, home, stops } = boot;
  progress('Subgraphs: ribs');
  // The ribs subgraph boots first; its run seams reach the runs domain once that is up.
  const runsPort = lateRunsPort();
  // runAgentTurn / getProviders / getMemory for the ribs here, as for the worker's (memory and the
  // runs domain come up later; the seams reach them once they are).
  const late: LateServices = {};
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
    ...subgraphBase(boot, boot.env.KEELSON_RIBS_PORT),
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
  return { ribs, runsPort, late };
}

/** The runs subgraph (the runs domain), then attached to the ribs' run seams. */
export async function bootRuns(
  boot: MeshBoot,
  temporal: MeshTemporal,
  projects: RunningProjects,
  ribsBoot: { ribs: RunningRibs; runsPort: LateRunsPort; late: LateServices },
): Promise<RunningRuns> {
  const { env, root, progress, userHome, stops } = boot;
  progress('Subgraphs: runs');
  const runs = await startRuns({
    ...subgraphBase(boot, boot.env.KEELSON_RUNS_PORT),
    settings: { ...runsSettings(env, { userHome, temporal, projectsUrl: projects.url }), ribWorkflows: ribWorkflowSource(ribsBoot.ribs.host) },
    log: root.child({ service: 'runs' }),
  });
  ribsBoot.late.runs = runs;
  stops.push({ name: 'runs subgraph', stop: () => runs.stop() });
  ribsBoot.runsPort.attach(runs.services);
  return runs;
}

/** The sessions subgraph (harness sessions on Temporal). */
export async function bootSessions(boot: MeshBoot, temporal: MeshTemporal, projects: RunningProjects, runs: RunningRuns): Promise<RunningSessions> {
  const { rawEnv, env, root, progress, userHome, stops } = boot;
  progress('Subgraphs: sessions');
  const sessions = await startSessions({
    ...subgraphBase(boot, boot.env.KEELSON_SESSIONS_PORT),
    settings: harnessSettings(env, rawEnv, userHome),
    projects: projects.url,
    temporal: { address: temporal.address, namespace: temporal.namespace, taskQueue: env.TEMPORAL_TASK_QUEUE, uiUrl: temporal.uiUrl },
    heartbeatTimeoutMs: env.KEELSON_RUN_HEARTBEAT_TIMEOUT_MS,
    runsUrl: runs.url,
    capabilityPollMs: env.KEELSON_CAPABILITY_POLL_MS,
    log: root.child({ service: 'sessions' }),
  });
  stops.push({ name: 'sessions subgraph', stop: () => sessions.stop() });
  return sessions;
}

/**
 * The memory subgraph, after sessions and runs: capture reads transcripts and prompt-node turns from
 * them by URL (and memory stops before them).
 */
export async function bootMemory(boot: MeshBoot, sessions: RunningSessions, runs: RunningRuns, late: LateServices): Promise<RunningMemory> {
  const { env, root, progress, stops } = boot;
  progress('Subgraphs: memory');
  const memoryLog = root.child({ service: 'memory' });
  const memory = await startMemoryService({
    ...subgraphBase(boot, boot.env.KEELSON_MEMORY_PORT),
    settings: memorySettings(env),
    sessionsUrl: sessions.url,
    runsUrl: runs.url,
    capabilityPollMs: env.KEELSON_CAPABILITY_POLL_MS,
    log: memoryLog,
  });
  late.memory = memory;
  stops.push({ name: 'memory subgraph', stop: () => memory.stop() });
  progress(`Memory: search is ${memory.services.mode.reason}`);
  return memory;
}

/** The swarms subgraph, and the swarm rib's operator tools (in this process's rib hosts) calling it. */
export async function bootSwarms(boot: MeshBoot, temporal: MeshTemporal, projects: RunningProjects): Promise<RunningSwarms> {
  const { rawEnv, env, root, security, progress, userHome, stops } = boot;
  progress('Subgraphs: swarms');
  const swarms = await startSwarms({
    ...subgraphBase(boot, boot.env.KEELSON_SWARMS_PORT),
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
  return swarms;
}

/** What the in-process worker's activities reach: the services booted before it. */
interface WorkerPeers {
  projects: RunningProjects;
  ribs: RunningRibs;
  runsPort: LateRunsPort;
  sessions: RunningSessions;
  memory: RunningMemory;
}

/** The Temporal worker in this process: its activities' state, its swarm state, then the worker. */
export async function bootWorker(boot: MeshBoot, temporal: MeshTemporal, peers: WorkerPeers): Promise<void> {
  const { opts, rawEnv, env, root, security, home, stops } = boot;
  const { projects, ribs, runsPort, sessions, memory } = peers;
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
