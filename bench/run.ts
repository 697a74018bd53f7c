// `npm run bench`: boots the whole mesh in-process and prints, from one run, (1) the projects
// subgraph asked directly vs through the gateway with authentication on vs a second gateway with it
// off, side by side, and (2) SQL statements per request at 10 and 100 projects. Progress goes to
// stderr, the report to stdout. See bench/README.md.
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { readFile } from 'node:fs/promises';
import { startGateway, supergraphPath } from '@keelson/gateway';
import { serviceIdentity, silentLogger } from '@keelson/service';
import type { RunningMesh } from '@keelson/stack';
import { runBench, startBenchStack, type Progress, type Teardown } from './benchStack';
import { startLoadClient, type LoadClient } from './loadClient';
import { fixed, percentile, table, times } from './report';
import { expectedLeases, seedProjects } from './seed';

const QUERIES = [
  { label: 'flat', text: '{ projects { id name rootPath createdAt } }' },
  { label: 'nested', text: '{ projects { id name rootPath createdAt workspaces { id path } } }' },
] as const;
/** Both nested loaders, and no isGitRepo/headCommit: those spawn git per project, which is not SQL. */
const SQL_QUERY = '{ projects { id name workspaces { id path } mutationLock { holder } } }';

const SMALL = 10;
const LARGE = 100;
/** Rounds alternate which target goes first, so drift and noise fall on both. */
const ROUNDS = 8;
/** Sequential requests per target, query and round: the latency samples. */
const LATENCY_REQUESTS = 150;
const CONCURRENCY = 8;
const THROUGHPUT_MS = 1_000;
const WARMUP_MS = 1_500;
/** Single requests measured per project count. */
const SQL_REPEATS = 3;

type Target = 'direct' | 'gateway' | 'auth off';
const TARGETS: Target[] = ['direct', 'gateway', 'auth off'];

/** Where each target is and the headers its requests carry (signed afresh per job: assertions live two minutes). */
type Targets = Record<Target, { url: string; headers: () => Promise<Record<string, string>> }>;

interface Cell {
  samplesMs: number[];
  completed: number;
  elapsedMs: number;
  perRoundRps: number[];
}

interface GraphQLBody<T> {
  data?: T | null;
  errors?: { message: string }[];
}

async function gqlData<T>(url: string, query: string, headers: Record<string, string> = {}): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ query }) });
  const body = (await res.json()) as GraphQLBody<T>;
  if (res.status !== 200 || body.errors?.length || !body.data) {
    throw new Error(`${url} answered ${res.status}: ${JSON.stringify(body.errors ?? body)}`);
  }
  return body.data;
}

const started = performance.now();
const seconds = () => `${((performance.now() - started) / 1000).toFixed(1)} s`;
const progress: Progress = (line) => process.stderr.write(`[bench ${seconds().padStart(7)}] ${line}\n`);

/** Checks both targets answer the benchmark queries with the seeded data before anything is timed. */
async function checkTargets(targets: Targets): Promise<void> {
  for (const target of TARGETS) {
    for (const q of QUERIES) {
      const { projects } = await gqlData<{ projects: { workspaces?: unknown[] }[] }>(targets[target].url, q.text, await targets[target].headers());
      if (projects.length !== SMALL) throw new Error(`${target} ${q.label}: expected ${SMALL} projects, got ${projects.length}`);
    }
  }
}

async function compareTargets(load: LoadClient, targets: Targets): Promise<Map<string, Cell>> {
  const cells = new Map<string, Cell>();
  const cell = (label: string, target: Target) => {
    const key = `${label}/${target}`;
    let c = cells.get(key);
    if (!c) cells.set(key, (c = { samplesMs: [], completed: 0, elapsedMs: 0, perRoundRps: [] }));
    return c;
  };

  progress(`warm-up: ${WARMUP_MS} ms at concurrency ${CONCURRENCY} per query and target`);
  for (const q of QUERIES) {
    for (const target of TARGETS) {
      await load.throughput(targets[target].url, q.text, CONCURRENCY, WARMUP_MS, await targets[target].headers());
      await load.latency(targets[target].url, q.text, 20, await targets[target].headers());
    }
  }

  for (let round = 0; round < ROUNDS; round++) {
    // Rotate which target goes first, so drift and noise fall on all of them.
    const order: Target[] = TARGETS.map((_, i) => TARGETS[(i + round) % TARGETS.length]!);
    progress(`round ${round + 1}/${ROUNDS} (${order.join(', then ')})`);
    for (const q of QUERIES) {
      for (const target of order) cell(q.label, target).samplesMs.push(...(await load.latency(targets[target].url, q.text, LATENCY_REQUESTS, await targets[target].headers())));
      for (const target of order) {
        const { completed, elapsedMs } = await load.throughput(targets[target].url, q.text, CONCURRENCY, THROUGHPUT_MS, await targets[target].headers());
        const c = cell(q.label, target);
        c.completed += completed;
        c.elapsedMs += elapsedMs;
        c.perRoundRps.push((completed / elapsedMs) * 1000);
      }
    }
  }
  return cells;
}

interface SqlCount {
  projects: number;
  leases: number;
  locks: number;
  statements: number[];
}

/**
 * Waits until the projects subgraph has sent no statement for 300 ms (at most 10 s): the rest of the
 * mesh reacts to the projects just created (the projects rib's board reads them), and those reads
 * are not the request's.
 */
async function quiet(mesh: RunningMesh): Promise<void> {
  const deadline = Date.now() + 10_000;
  let last = mesh.projects.queryCount();
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 300));
    const now = mesh.projects.queryCount();
    if (now === last) return;
    last = now;
  }
}

/** SQL statements the projects subgraph sends for single requests of {@link SQL_QUERY} through the gateway. */
async function countSql(mesh: RunningMesh, headers: Record<string, string>): Promise<SqlCount> {
  type Data = { projects: { workspaces: unknown[]; mutationLock: unknown }[] };
  const statements: number[] = [];
  let data: Data | undefined;
  for (let i = 0; i < SQL_REPEATS; i++) {
    await quiet(mesh);
    const before = mesh.projects.queryCount();
    data = await gqlData<Data>(mesh.gatewayUrl, SQL_QUERY, headers);
    statements.push(mesh.projects.queryCount() - before);
  }
  const projects = data!.projects;
  return {
    projects: projects.length,
    leases: projects.reduce((n, p) => n + p.workspaces.length, 0),
    locks: projects.filter((p) => p.mutationLock).length,
    statements,
  };
}

function latencyReport(cells: Map<string, Cell>): { text: string; ratioLine: string; authLine: string } {
  const stats = (label: string, target: Target) => {
    const c = cells.get(`${label}/${target}`)!;
    return {
      p50: percentile(c.samplesMs, 50),
      p99: percentile(c.samplesMs, 99),
      rps: (c.completed / c.elapsedMs) * 1000,
      min: Math.min(...c.perRoundRps),
      max: Math.max(...c.perRoundRps),
      n: c.samplesMs.length,
    };
  };
  const rows: string[][] = [];
  const ratios: string[] = [];
  const auth: string[] = [];
  for (const q of QUERIES) {
    const d = stats(q.label, 'direct');
    const g = stats(q.label, 'gateway');
    const o = stats(q.label, 'auth off');
    for (const [target, s] of [['direct', d], ['gateway (auth on)', g], ['gateway (auth off)', o]] as const) {
      rows.push([q.label, target, fixed(s.p50, 2), fixed(s.p99, 2), fixed(s.rps, 0), `${fixed(s.min, 0)}–${fixed(s.max, 0)}`, String(s.n)]);
    }
    rows.push([q.label, 'gateway/direct', times(g.p50 / d.p50), times(g.p99 / d.p99), times(g.rps / d.rps), '', '']);
    rows.push([q.label, 'auth on/off', times(g.p50 / o.p50), times(g.p99 / o.p99), times(g.rps / o.rps), '', '']);
    ratios.push(`${q.label}: p50 ${times(g.p50 / d.p50)}  p99 ${times(g.p99 / d.p99)}  req/s ${times(g.rps / d.rps)}`);
    auth.push(`${q.label}: p50 ${times(g.p50 / o.p50)} (${fixed(((g.p50 - o.p50) / o.p50) * 100, 1)}% of the auth-off p50)  req/s ${times(g.rps / o.rps)}`);
  }
  const text = table(
    ['query', 'target', 'p50 ms', 'p99 ms', `req/s @${CONCURRENCY}`, 'req/s per round', 'latency samples'],
    rows,
    ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
  );
  return {
    text,
    ratioLine: `ratios gateway/direct (${SMALL} projects) — ${ratios.join(' · ')}`,
    authLine: `authentication's cost, gateway auth on/off (${SMALL} projects) — ${auth.join(' · ')}`,
  };
}

function sqlReport(small: SqlCount, large: SqlCount): { text: string; constant: boolean } {
  const rows = [small, large].map((s) => [
    String(s.projects),
    String(s.leases),
    String(s.locks),
    String(s.statements[0]),
    s.statements.join(', '),
  ]);
  const all = [...small.statements, ...large.statements];
  const constant = all.every((n) => n === all[0]);
  const text = table(
    ['projects', 'leases', 'locks', 'SQL statements / request', `each of ${SQL_REPEATS} requests`],
    rows,
    ['right', 'right', 'right', 'right', 'right'],
  );
  return { text, constant };
}

/** Runs both benchmarks and returns the report. */
async function main(teardown: Teardown): Promise<string> {
  const mesh = await startBenchStack(teardown, progress);
  const load = startLoadClient();
  teardown.push('stop the load worker', () => load.close());
  const services = mesh.projects.services;
  // The same gateway with authentication off, in this process, over the same subgraphs: the only
  // difference measured is the credential check (and nothing else is asked of the request).
  progress('a second gateway with authentication off, over the same subgraphs');
  const authOff = await startGateway({
    supergraphSdl: await readFile(supergraphPath(), 'utf8'),
    port: 0,
    security: { ...mesh.security, auth: 'off' },
    subgraphUrls: mesh.subgraphUrls,
    log: silentLogger(),
  });
  teardown.push('stop the auth-off gateway', () => authOff.stop());
  const admin = { authorization: `Bearer ${mesh.adminToken!.token}` };
  const asService = serviceIdentity(mesh.security.assertions, 'bench');
  const targets: Targets = {
    direct: { url: mesh.subgraphUrls.projects!, headers: () => asService.headers() },
    gateway: { url: mesh.gatewayUrl, headers: async () => admin },
    'auth off': { url: authOff.url, headers: async () => ({}) },
  };

  progress(`seeding ${SMALL} projects (git init + commit each; a lock on each, a worktree lease on every 4th)`);
  await seedProjects(services, 0, SMALL, progress);
  await checkTargets(targets);

  progress(`1. direct vs gateway (auth on) vs gateway (auth off): ${ROUNDS} interleaved rounds`);
  const cells = await compareTargets(load, targets);

  progress(`2. SQL statements per request at ${SMALL} projects`);
  const small = await countSql(mesh, admin);
  progress(`seeding ${LARGE - SMALL} more projects`);
  await seedProjects(services, SMALL, LARGE, progress);
  progress(`2. SQL statements per request at ${LARGE} projects`);
  const large = await countSql(mesh, admin);
  for (const [n, s] of [[SMALL, small], [LARGE, large]] as const) {
    if (s.projects !== n || s.locks !== n || s.leases !== expectedLeases(n)) {
      throw new Error(`seeded data not as expected at ${n} projects: ${JSON.stringify(s)}`);
    }
  }

  const latency = latencyReport(cells);
  const sql = sqlReport(small, large);
  const out = [
    '',
    `Keelson Mesh bench — node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} at the end`,
    '',
    `1. The same query sent straight to the projects subgraph (with a service assertion), through the gateway with`,
    `   an API token (authentication on), and through a second gateway with authentication off (${SMALL} projects)`,
    `   ${ROUNDS} interleaved rounds, first target alternating; per round and query: ${LATENCY_REQUESTS} sequential requests`,
    `   per target (latency), then ${THROUGHPUT_MS} ms closed loop at concurrency ${CONCURRENCY} per target (throughput).`,
    ...QUERIES.map((q) => `   ${q.label.padEnd(6)} = ${q.text}`),
    '',
    latency.text,
    '',
    '2. SQL statements per request through the gateway (projects subgraph DataSource, queryCount() deltas)',
    `   ${SQL_QUERY}`,
    '',
    sql.text,
    '',
    `   constant: ${sql.constant ? 'yes' : 'no'} (${small.statements[0]} at ${SMALL} projects, ${large.statements[0]} at ${LARGE})`,
    '',
    latency.ratioLine,
    latency.authLine,
  ];
  return `${out.join('\n')}\n`;
}

runBench(main, progress);
