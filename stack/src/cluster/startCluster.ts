import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort } from '@keelson/service';
import { answersHealthAt, startClusterProcess, type ClusterProcess } from './clusterProcess';
import { clusterServices, reachEnv, slotsOf, type ClusterService } from './clusterShape';
import { startLoadBalancer, type LoadBalancer } from './loadBalancer';
import { startTemporalServer, type TemporalServer } from './temporalServer';

const root = join(__dirname, '..', '..', '..');

export interface ClusterOptions {
  /** What every process starts from: DATABASE_URL, KEELSON_HOME, KEELSON_ASSERTION_SECRET, KEELSON_WORKSPACE, … */
  env: NodeJS.ProcessEnv;
  /** The mesh's database (every service shares it); its server also holds Temporal's. */
  databaseUrl: string;
  /** Temporal's persistence database on the same server (visibility: `<name>_visibility`). */
  temporalDatabase: string;
  /** Where temporal-server and temporal-sql-tool are. */
  binDir: string;
  /** Configs, the HAProxy socket and every process's log. */
  dir: string;
  /** @default 'default' */
  namespace?: string;
  /** The load balancer's gateway port. @default a free one */
  gatewayPort?: number;
  progress?: (line: string) => void;
  /** How long each process may take to serve. @default 180 s (many TypeScript boots share two cores) */
  readyTimeoutMs?: number;
}

export interface RunningCluster {
  /** The gateway through the load balancer: HTTP and WebSocket at `/graphql`. */
  gatewayUrl: string;
  /** Each replica of a service with a port, directly (`http://127.0.0.1:<port>/graphql`), by slot. */
  replicaUrls: Record<string, string[]>;
  /** Where each service with a port is served through the load balancer (what the services are given). */
  serviceUrls: Record<string, string>;
  temporal: TemporalServer;
  loadBalancer: LoadBalancer;
  /** The processes of `service` in use (started, not retired by a rolling restart), by slot. */
  processes(service: string): ClusterProcess[];
  /** SIGKILL to the process in slot `index` of `service` (a crash); it stays down until `start`. */
  kill(service: string, index: number): Promise<void>;
  /** Starts slot `index` of `service` again, on its port, and waits until it serves. */
  start(service: string, index: number): Promise<void>;
  /**
   * An orderly restart of each process of `service`, one at a time: a replica is drained out of the
   * load balancer's rotation, stopped (SIGTERM), started again and put back once its health check
   * passes; a service of one replica starts its replacement in the spare slot first. Workers are
   * stopped (their activities drained) and started one at a time.
   */
  rollingRestart(service: string, progress?: (line: string) => void): Promise<void>;
  /** Everything, in reverse boot order: gateways first, Temporal and HAProxy last. */
  stop(): Promise<void>;
}

interface Replica {
  service: ClusterService;
  index: number;
  port: number | undefined;
  proc: ClusterProcess | undefined;
  /** Stopped on purpose (a rolling restart moved it to its spare slot). */
  stopped?: boolean;
}

/** Each replica's environment: the shared one, where Temporal and its peers are, its own port. */
function replicaEnv(opts: ClusterOptions, temporal: TemporalServer, urls: Record<string, string>, r: Replica): NodeJS.ProcessEnv {
  return {
    ...opts.env,
    DATABASE_URL: opts.databaseUrl,
    TEMPORAL_ADDRESS: temporal.address,
    TEMPORAL_NAMESPACE: opts.namespace ?? 'default',
    KEELSON_HOST: '127.0.0.1',
    KEELSON_LOG_FORMAT: 'json',
    ...reachEnv(r.service, urls),
    ...(r.service.port ? { [r.service.port.variable]: String(r.port) } : {}),
    // Two workers on one machine: metrics only where asked for; at least info, its "worker polling" says it is ready.
    ...(r.service.name === 'worker' ? { KEELSON_WORKER_METRICS_PORT: opts.env.KEELSON_WORKER_METRICS_PORT ?? '0', KEELSON_LOG_LEVEL: opts.env.KEELSON_LOG_LEVEL === 'debug' ? 'debug' : 'info' } : {}),
  };
}

async function launch(opts: ClusterOptions, env: NodeJS.ProcessEnv, r: Replica): Promise<ClusterProcess> {
  const name = `${r.service.name}-${r.index + 1}`;
  return startClusterProcess({
    name,
    command: process.execPath,
    args: ['--max-semi-space-size=64', '-r', './scripts/register.js', `apps/${r.service.name}/main.ts`],
    cwd: root,
    env,
    logFile: join(opts.dir, `${name}.log`),
    // The worker serves no port: it is ready once it polls its task queue.
    ready: r.port ? () => answersHealthAt(`http://127.0.0.1:${r.port}/health`) : async (output) => /"msg":"worker polling"/.test(output),
    readyTimeoutMs: opts.readyTimeoutMs ?? 180_000,
  });
}

/** Boots the shape: Temporal on Postgres, HAProxy, then every service's replicas (gateways last). */
export async function startCluster(opts: ClusterOptions): Promise<RunningCluster> {
  const progress = opts.progress ?? (() => {});
  await mkdir(opts.dir, { recursive: true });
  const replicas: Replica[] = [];
  for (const service of clusterServices) for (let index = 0; index < slotsOf(service); index++) replicas.push({ service, index, port: service.port ? await freePort() : undefined, proc: undefined });
  const stops: { name: string; stop: () => Promise<void> }[] = [];
  const stopAll = async () => {
    for (const s of stops.splice(0).reverse()) {
      progress(`stopping ${s.name}`);
      await s.stop().catch(() => undefined);
    }
  };
  try {
    progress(`Temporal server on Postgres (databases ${opts.temporalDatabase}, ${opts.temporalDatabase}_visibility)`);
    const temporal = await startTemporalServer({ binDir: opts.binDir, postgresUrl: opts.databaseUrl, database: opts.temporalDatabase, dir: join(opts.dir, 'temporal'), namespace: opts.namespace ?? 'default' });
    stops.push({ name: 'Temporal server', stop: () => temporal.stop() });
    const pools = clusterServices
      .filter((s) => s.port)
      .map((s) => ({ name: s.name, replicas: replicas.filter((r) => r.service === s).map((r) => r.port!), serving: s.replicas, ...(s.name === 'gateway' && opts.gatewayPort ? { front: opts.gatewayPort } : {}) }));
    const loadBalancer = await startLoadBalancer(opts.dir, pools);
    stops.push({ name: 'HAProxy', stop: () => loadBalancer.stop() });
    progress(`HAProxy: ${pools.map((p) => `${p.name} ${loadBalancer.urls[p.name]} → :${p.replicas.slice(0, p.serving).join(', :')}`).join('; ')}`);
    const urls = Object.fromEntries(pools.map((p) => [p.name, `${loadBalancer.urls[p.name]}/graphql`]));
    const startReplica = async (r: Replica) => {
      const env = replicaEnv(opts, temporal, urls, r);
      r.proc = await launch(opts, env, r);
      progress(`${r.proc.name} (pid ${r.proc.pid})${r.port ? ` on :${r.port}` : ''}`);
    };
    // Everything but the gateways at once (migrations take a database-wide lock), then the gateways; spare slots stay empty.
    const serving = replicas.filter((r) => r.index < r.service.replicas);
    const [first, last] = [serving.filter((r) => r.service.name !== 'gateway'), serving.filter((r) => r.service.name === 'gateway')];
    for (const wave of [first, last]) {
      const settled = await Promise.allSettled(wave.map(startReplica));
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
    }
    stops.push({ name: 'the mesh services', stop: () => stopReplicas(replicas, progress) });
    // Served once HAProxy's health checks have every replica UP (a check before it listened marked it DOWN).
    for (const r of serving) if (r.port) await loadBalancer.ready(r.service.name, r.index);
    return clusterHandle({ temporal, loadBalancer, urls, replicas, startReplica, stopAll });
  } catch (err) {
    await stopReplicas(replicas, progress);
    await stopAll();
    throw err;
  }
}

/** Stops every replica still running, in reverse boot order, one service at a time. */
async function stopReplicas(replicas: Replica[], progress: (line: string) => void): Promise<void> {
  const names = [...new Set(replicas.map((r) => r.service.name))].reverse();
  for (const name of names) {
    const running = replicas.filter((r) => r.service.name === name && r.proc && !r.stopped);
    if (running.length) progress(`stopping ${running.map((r) => r.proc!.name).join(', ')}`);
    await Promise.all(running.map((r) => r.proc!.stop()));
  }
}

interface HandleParts {
  temporal: TemporalServer;
  loadBalancer: LoadBalancer;
  urls: Record<string, string>;
  replicas: Replica[];
  startReplica: (r: Replica) => Promise<void>;
  stopAll: () => Promise<void>;
}

function clusterHandle({ temporal, loadBalancer, urls, replicas, startReplica, stopAll }: HandleParts): RunningCluster {
  const replica = (service: string, index: number) => {
    const r = replicas.find((x) => x.service.name === service && x.index === index);
    if (!r) throw new Error(`the cluster has no ${service} slot ${index}`);
    return r;
  };
  const replicaUrls: Record<string, string[]> = {};
  for (const r of replicas) if (r.port) (replicaUrls[r.service.name] ??= []).push(`http://127.0.0.1:${r.port}/graphql`);
  return {
    gatewayUrl: urls.gateway!,
    replicaUrls,
    serviceUrls: urls,
    temporal,
    loadBalancer,
    processes: (service) => replicas.filter((r) => r.service.name === service && r.proc && !r.stopped).map((r) => r.proc!),
    kill: (service, index) => replica(service, index).proc!.kill(),
    async start(service, index) {
      const r = replica(service, index);
      await startReplica(r);
      if (r.port) await loadBalancer.ready(service, index);
    },
    rollingRestart: (service, progress = () => {}) => rollingRestart(loadBalancer, replicas.filter((r) => r.service.name === service), startReplica, progress),
    stop: stopAll,
  };
}

/** See {@link RunningCluster.rollingRestart}. */
async function rollingRestart(loadBalancer: LoadBalancer, slots: Replica[], startReplica: (r: Replica) => Promise<void>, progress: (line: string) => void): Promise<void> {
  const running = slots.filter((r) => r.proc && r.proc.pid && !r.stopped);
  for (const old of running) {
    const name = old.service.name;
    const spare = old.service.port && old.service.replicas === 1 ? slots.find((r) => r !== old && !(r.proc && !r.stopped)) : undefined;
    if (spare) {
      progress(`${name}: starting its replacement in slot ${spare.index + 1}`);
      await startReplica(spare);
      spare.stopped = false;
      await loadBalancer.ready(name, spare.index);
    }
    if (old.service.port) await loadBalancer.drain(name, old.index);
    progress(`${name}: stopping ${old.proc!.name} (pid ${old.proc!.pid})`);
    await old.proc!.stop();
    old.stopped = true;
    if (spare) {
      await loadBalancer.maintain(name, old.index);
      continue;
    }
    await startReplica(old);
    old.stopped = false;
    if (old.service.port) await loadBalancer.ready(name, old.index);
  }
}
