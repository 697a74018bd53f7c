// `npm run bench:replicas`: throughput of a flat and a federated query at 20 connections through one
// replica vs two replicas of the gateway and of the runs subgraph (apps/gateway/main.ts and
// apps/runs/main.ts, each a process of its own), each pair behind a round-robin TCP proxy; rounds
// interleaved. The other subgraphs run once, in this process; the proxies and the load generator in
// worker threads. Progress goes to stderr, the report to stdout. See bench/README.md.
// `KEELSON_BENCH_TARGET=cluster` measures the production shape instead (`startCluster`: HAProxy in
// front of processes of every service; bench/replicasCluster.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { RunStore } from '@keelson/runs';
import { freePort } from '@keelson/service';
import type { RunningMesh } from '@keelson/stack';
import { startAppProcess } from '../test/support/appProcess';
import { definitionOf, registerRun } from '../test/support/registerRun';
import { benchRounds, runBench, startBenchStack, stderrProgress, UNCACHED_GATEWAY, type Teardown } from './benchStack';
import { startLoadClient } from './loadClient';
import type { ProxyReply, ProxyRequest } from './proxies.worker';
import { fixed, percentile, table, times } from './report';
import { clusterReplicaSetup, type ReplicaSetup } from './replicasCluster';
import { seedProjects } from './seed';

const PROJECTS = 30;
const RUNS_PER_PROJECT = 5;
const CONNECTIONS = 20;
const { rounds: ROUNDS, cellMs: CELL_MS } = benchRounds({ rounds: 5, cellMs: 2_000 });
const WARMUP_MS = 1_000;
/** How long the four processes may take to boot at once (a busy two-core box is slow at loading TypeScript). */
const READY_MS = 300_000;

const QUERIES = {
  flat: '{ projects { id name } }',
  federated: '{ projects { id name runs(first: 5) { edges { node { id status workflowName } } } } }',
} as const;
type Query = keyof typeof QUERIES;
type Replicas = 1 | 2;

const progress = stderrProgress('bench:replicas');

/** A request before it is numbered (Omit distributed over the union). */
type Unnumbered<R> = R extends unknown ? Omit<R, 'id'> : never;

/** The proxies' worker thread: each proxy by its index. */
function startProxyWorker(teardown: Teardown) {
  const worker = new Worker(join(__dirname, 'proxies.worker.ts'));
  const pending = new Map<number, { resolve: (v: number | number[]) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  worker.on('message', (reply: ProxyReply) => {
    const waiter = pending.get(reply.id);
    pending.delete(reply.id);
    if (reply.ok) waiter?.resolve(reply.value);
    else waiter?.reject(new Error(reply.message));
  });
  worker.on('error', (err) => [...pending.values()].forEach((w) => w.reject(err)));
  const ask = <T extends number | number[]>(req: Unnumbered<ProxyRequest>) =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (v: number | number[]) => void, reject });
      worker.postMessage({ ...req, id });
    });
  teardown.push('stop the proxies', async () => {
    await ask({ op: 'close' });
    await worker.terminate();
  });
  return {
    /** A proxy in front of `targets`; resolves with its index and port. */
    start: (targets: number[]) => ask<number[]>({ op: 'start', targets }).then(([index, port]) => ({ index: index!, port: port! })),
    /** New connections to the first `count` targets; the open ones are ended, so pooled ones reconnect. */
    async use(proxy: number, count: number) {
      await ask({ op: 'limit', proxy, count });
      await ask({ op: 'drop', proxy });
    },
    routed: (proxy: number) => ask<number[]>({ op: 'routed', proxy }),
  };
}

/** Runs of a three-node bash workflow for every project, registered straight through the runs store (no workflow executes them). */
async function seedRuns(mesh: RunningMesh, teardown: Teardown): Promise<void> {
  const cwd = await mkdtemp(join(tmpdir(), 'keelson-bench-runs-'));
  teardown.push(`remove ${cwd}`, () => rm(cwd, { recursive: true, force: true }));
  const store = new RunStore(mesh.runs.services.dataSource, mesh.runs.services.events);
  const definition = definitionOf({ name: 'bench', nodes: ['a', 'b', 'c'].map((id) => ({ id, type: 'bash', bash: `echo ${id}` })) });
  for (const project of await mesh.projects.services.projects.list()) {
    for (let i = 0; i < RUNS_PER_PROJECT; i++) await registerRun(store, definition, { cwd, scope: 'GLOBAL', projectId: project.id, projectName: project.name });
  }
}

interface Cell {
  samplesMs: number[];
  completed: number;
  elapsedMs: number;
  perRoundRps: number[];
}

async function main(teardown: Teardown): Promise<string> {
  const load = startLoadClient();
  teardown.push('stop the load worker', () => load.close());
  const setup = process.env.KEELSON_BENCH_TARGET === 'cluster' ? await clusterReplicaSetup(teardown, progress, PROJECTS) : await proxiesSetup(teardown);
  const { url, headers, configure } = setup;
  // Both setups answer both queries alike before anything is timed.
  for (const q of Object.keys(QUERIES) as Query[]) {
    const answers = new Set<string>();
    for (const replicas of [1, 2] as const) {
      await configure(replicas);
      for (let i = 0; i < 2 * replicas; i++) {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query: QUERIES[q] }) });
        const text = await res.text();
        if (res.status !== 200 || text.includes('"errors"')) throw new Error(`${q} with ${replicas} replica(s): ${res.status} ${text.slice(0, 400)}`);
        answers.add(text);
      }
    }
    if (answers.size !== 1) throw new Error(`${q}: the setups answered differently`);
  }
  try {
    return report(await measure(url, headers, configure, load), await setup.routed(), setup.describe);
  } catch (err) {
    // What the replicas logged says why one answered with an error.
    throw new Error(`${(err as Error).message}\n${setup.logs?.() ?? ''}`);
  }
}

/** The mesh in this process with two gateway and two runs processes, each pair behind a TCP proxy of the bench's. */
async function proxiesSetup(teardown: Teardown): Promise<ReplicaSetup> {
  const mesh = await startBenchStack(teardown, progress);
  progress(`seeding ${PROJECTS} projects (git init + commit each) and ${RUNS_PER_PROJECT} runs each`);
  await seedProjects(mesh.projects.services, 0, PROJECTS, progress);
  await seedRuns(mesh, teardown);

  const proxies = startProxyWorker(teardown);
  const runsPorts = [await freePort(), await freePort()];
  const gatewayPorts = [await freePort(), await freePort()];
  const runsProxy = await proxies.start(runsPorts);
  const front = await proxies.start(gatewayPorts);
  // The mesh's database (API tokens, runs) and home (the assertion key); runs through the runs proxy.
  const base: NodeJS.ProcessEnv = { ...process.env, ...UNCACHED_GATEWAY, DATABASE_URL: mesh.env.DATABASE_URL, KEELSON_HOME: mesh.env.KEELSON_HOME, KEELSON_HOST: '127.0.0.1', KEELSON_LOG_LEVEL: 'warn' };
  const urls = { ...mesh.subgraphUrls, runs: `http://127.0.0.1:${runsProxy.port}/graphql` };
  const urlEnv = Object.fromEntries(Object.entries(urls).map(([name, url]) => [`KEELSON_${name.toUpperCase()}_URL`, url]));
  progress(`two runs processes (:${runsPorts.join(', :')}) behind :${runsProxy.port}, two gateway processes (:${gatewayPorts.join(', :')}) behind :${front.port}`);
  const children = await Promise.allSettled([
    ...runsPorts.map((port) =>
      startAppProcess('runs', { ...base, KEELSON_RUNS_PORT: String(port), TEMPORAL_ADDRESS: mesh.temporal.address, KEELSON_PROJECTS_URL: mesh.subgraphUrls.projects }, `http://127.0.0.1:${port}/health`, READY_MS),
    ),
    ...gatewayPorts.map((port) => startAppProcess('gateway', { ...base, ...urlEnv, KEELSON_GATEWAY_PORT: String(port) }, `http://127.0.0.1:${port}/health`, READY_MS)),
  ]);
  for (const c of children) if (c.status === 'fulfilled') teardown.push(`stop ${c.value.name} ${c.value.pid}`, () => c.value.stop());
  const failed = children.find((c): c is PromiseRejectedResult => c.status === 'rejected');
  if (failed) throw failed.reason;

  return {
    url: `http://127.0.0.1:${front.port}/graphql`,
    headers: { authorization: `Bearer ${mesh.adminToken!.token}` },
    async configure(replicas: Replicas) {
      // The runs proxy first: a gateway's pooled connections to it reconnect to the replicas now in use.
      await proxies.use(runsProxy.index, replicas);
      await proxies.use(front.index, replicas);
      // Time for the gateways to see their pooled connections closed before the next request.
      await new Promise((r) => setTimeout(r, 500));
    },
    routed: async () => ({ front: await proxies.routed(front.index), runs: await proxies.routed(runsProxy.index) }),
    logs: () => children.flatMap((c) => (c.status === 'fulfilled' ? [`--- ${c.value.name} ${c.value.pid}:\n${c.value.output().slice(-3_000)}`] : [])).join('\n'),
    describe: [
      `one = 1 gateway process + 1 runs process; two = 2 + 2; either way behind round-robin TCP proxies (a worker thread);`,
      `projects and the other subgraphs: one each, in the bench's process.`,
      `${PROJECTS} projects, ${RUNS_PER_PROJECT} runs each`,
    ],
  };
}

/** The interleaved rounds: per round, both setups (the first alternating), each query for CELL_MS at CONNECTIONS. */
async function measure(url: string, headers: Record<string, string>, configure: (replicas: Replicas) => Promise<void>, load: ReturnType<typeof startLoadClient>) {
  const cells = new Map<string, Cell>();
  progress(`warm-up: ${WARMUP_MS} ms per query and setup`);
  for (const replicas of [1, 2] as const) {
    await configure(replicas);
    for (const q of Object.keys(QUERIES) as Query[]) await load.mixed(url, [JSON.stringify({ query: QUERIES[q] })], CONNECTIONS, WARMUP_MS, headers);
  }
  for (let round = 0; round < ROUNDS; round++) {
    progress(`round ${round + 1}/${ROUNDS}`);
    // The setup that goes first alternates per round: drift and noise fall on both alike.
    for (const replicas of round % 2 ? ([2, 1] as const) : ([1, 2] as const)) {
      await configure(replicas);
      for (const q of Object.keys(QUERIES) as Query[]) {
        const r = await load.mixed(url, [JSON.stringify({ query: QUERIES[q] })], CONNECTIONS, CELL_MS, headers);
        const key = `${q}/${replicas}`;
        const c = cells.get(key) ?? { samplesMs: [], completed: 0, elapsedMs: 0, perRoundRps: [] };
        cells.set(key, c);
        c.samplesMs.push(...r.samplesMs);
        c.completed += r.completed;
        c.elapsedMs += r.elapsedMs;
        c.perRoundRps.push((r.completed / r.elapsedMs) * 1000);
      }
    }
  }
  return cells;
}

function report(cells: Map<string, Cell>, routed: { front: number[]; runs: number[] }, describe: string[]): string {
  const rows: string[][] = [];
  const summary: string[] = [];
  for (const q of Object.keys(QUERIES) as Query[]) {
    const stat = (replicas: Replicas) => {
      const c = cells.get(`${q}/${replicas}`)!;
      return { rps: (c.completed / c.elapsedMs) * 1000, min: Math.min(...c.perRoundRps), max: Math.max(...c.perRoundRps), p50: percentile(c.samplesMs, 50), p99: percentile(c.samplesMs, 99) };
    };
    const [one, two] = [stat(1), stat(2)];
    for (const [label, s] of [['one', one], ['two', two]] as const) rows.push([q, label, fixed(s.rps, 0), `${fixed(s.min, 0)}–${fixed(s.max, 0)}`, fixed(s.p50, 2), fixed(s.p99, 2)]);
    rows.push([q, 'two/one', times(two.rps / one.rps), '', times(two.p50 / one.p50), times(two.p99 / one.p99)]);
    summary.push(`${q} @${CONNECTIONS}: two/one req/s ${times(two.rps / one.rps)}`);
  }
  return [
    '',
    `Keelson Mesh bench:replicas — node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} at the end`,
    ...describe,
    `${CONNECTIONS} connections, closed loop; ${ROUNDS} interleaved rounds of ${CELL_MS} ms per cell, the setup that goes first alternating`,
    `flat      = ${QUERIES.flat}`,
    `federated = ${QUERIES.federated}`,
    '',
    table(['query', 'replicas', 'req/s', 'req/s per round', 'p50 ms', 'p99 ms'], rows, ['left', 'left', 'right', 'right', 'right', 'right']),
    '',
    ...summary.map((s) => `  ${s}`),
    `  connections per replica over the run (the load client opens ${CONNECTIONS} per cell): gateways ${routed.front.join(' / ')}, runs ${routed.runs.join(' / ')}`,
    '',
  ].join('\n');
}

runBench(main, progress);
