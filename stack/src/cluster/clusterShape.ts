/**
 * The production shape, described once: which `apps/*` processes run, how many of each, which port
 * each listens on and which services it reaches. `npm run start:cluster` runs it on this machine;
 * `docker-compose.yml` names the same processes, environment and Temporal version
 * (`clusterShape.unit.test.ts` compares them).
 */
export interface ClusterService {
  /** The service's name: the docker-compose service and the `apps/<name>/main.ts` it runs. */
  name: string;
  /** Processes of it in the cluster. More than one sit behind the load balancer (or, for workers, share the task queue). */
  replicas: number;
  /** Its GraphQL port variable and the port docker-compose gives it (none: the worker serves no GraphQL). */
  port?: { variable: string; compose: number };
  /** The services whose URL it is given (`KEELSON_<NAME>_URL`). */
  reaches: readonly string[];
}

/** The Temporal server version: docker-compose's `temporalio/auto-setup` tag and scripts/temporal-server/build.sh's. */
export const CLUSTER_TEMPORAL_VERSION = '1.29.1';

/**
 * The Temporal server's Postgres pools, per service (frontend, history, matching, worker) and store:
 * at most 4 × (6 + 2) = 32 connections, leaving the rest of a stock `max_connections` (100) to the
 * mesh's processes (two side by side during a rolling restart). With the server's defaults (20 per
 * store) it held ~50 idle and the mesh's pools met "too many clients" under load. docker-compose
 * passes the same to `temporalio/auto-setup` (`SQL_MAX_CONNS`, `SQL_VIS_MAX_CONNS` and their idle twins).
 */
export const CLUSTER_TEMPORAL_POOLS = { persistence: 6, visibility: 2 } as const;

const subgraphNames = ['projects', 'ribs', 'runs', 'sessions', 'memory', 'identity', 'swarms'] as const;

/** Every process of the shape, in boot order (stopped in reverse). */
export const clusterServices: readonly ClusterService[] = [
  { name: 'identity', replicas: 1, port: { variable: 'KEELSON_IDENTITY_PORT', compose: 4007 }, reaches: [] },
  { name: 'projects', replicas: 1, port: { variable: 'KEELSON_PROJECTS_PORT', compose: 4001 }, reaches: [] },
  { name: 'runs', replicas: 2, port: { variable: 'KEELSON_RUNS_PORT', compose: 4003 }, reaches: ['projects'] },
  { name: 'sessions', replicas: 2, port: { variable: 'KEELSON_SESSIONS_PORT', compose: 4004 }, reaches: ['projects', 'runs'] },
  { name: 'memory', replicas: 1, port: { variable: 'KEELSON_MEMORY_PORT', compose: 4005 }, reaches: ['sessions', 'runs'] },
  { name: 'swarms', replicas: 1, port: { variable: 'KEELSON_SWARMS_PORT', compose: 4006 }, reaches: ['projects'] },
  { name: 'ribs', replicas: 1, port: { variable: 'KEELSON_RIBS_PORT', compose: 4002 }, reaches: ['projects', 'swarms', 'memory'] },
  { name: 'worker', replicas: 2, reaches: ['projects', 'memory', 'swarms'] },
  { name: 'gateway', replicas: 2, port: { variable: 'KEELSON_GATEWAY_PORT', compose: 4000 }, reaches: subgraphNames },
];

/** `KEELSON_<NAME>_URL` for each service `service` reaches, from where each one answers. */
export function reachEnv(service: ClusterService, urls: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    service.reaches.map((name) => {
      const url = urls[name];
      if (!url) throw new Error(`the cluster shape: ${service.name} reaches ${name}, which has no URL`);
      return [`KEELSON_${name.toUpperCase()}_URL`, url];
    }),
  );
}

/**
 * Every service with a port sits behind the load balancer, in at least two slots: a service of one
 * replica keeps its second slot as a spare, where its replacement starts before it stops (a
 * rolling restart drops no request).
 */
export function slotsOf(service: ClusterService): number {
  return service.port ? Math.max(service.replicas, 2) : service.replicas;
}
