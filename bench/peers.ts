// `npm run bench:peers`: our gateway vs Hive Gateway with the Hive Router's Rust query planner vs Hive
// Gateway (its default runtime) vs the owning subgraph directly, in one run, over
// the same supergraph and the same running subgraphs. The subgraphs run in this process (as in
// `npm run bench`); each gateway runs in a process of its own; the load generator in a worker thread.
// Progress goes to stderr, the report to stdout. See bench/README.md.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { supergraphForPlanning, supergraphPath } from '@keelson/gateway';
import { freePort, heapFlags, serviceIdentity } from '@keelson/service';
import type { RunningMesh } from '@keelson/stack';
import { benchRounds, runBench, startBenchStack, stderrProgress, UNCACHED_GATEWAY, type Teardown } from './benchStack';
import { startLoadClient, type LoadClient } from './loadClient';
import { CACHED_GATEWAY_MAX_MB, measureMixed, mixedWorkloads, reportMixed } from './peersMixed';
import { fixed, percentile, table, times } from './report';
import { seedProjects } from './seed';

const PROJECTS = 30;
const RUNS_PER_PROJECT = 6;
const NODES_PER_RUN = 3;
const { rounds: ROUNDS, cellMs: CELL_MS } = benchRounds({ rounds: 4, cellMs: 1_500 });
const WARMUP_MS = 1_500;
const CONNECTIONS = [1, 20] as const;
/** Distinct bodies of a varied workload: a request rarely meets an identical one in flight. */
const VARIED = 2_000;

type Target = 'ours' | 'hive-rust' | 'hive' | 'direct';
interface Workload {
  query: 'flat' | 'federated' | 'deep';
  variant: 'identical' | 'varied';
  bodies: string[];
  /** `direct` only where one subgraph owns the whole query. */
  targets: Target[];
}

const body = (query: string, variables: Record<string, unknown> = {}) => JSON.stringify({ query, variables });
const pick = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i));

const FLAT_IDENTICAL = '{ projects { id name } }';
const FLAT_VARIED = 'query Flat($name: String) { project(name: $name) { id name rootPath createdAt } }';
const FEDERATED = 'query Federated($f: Int, $a: String) { projects { id name runs(first: $f, after: $a) { edges { node { id status workflowName } } } } }';
const DEEP =
  'query Deep($f: Int, $a: String) { projects { id runs(first: $f, after: $a) { edges { node { id status nodes { id status } project { id name } } } } } }';

/** `after` past every seeded run (so each page is a full one), different per body. */
const afterAll = (i: number) => String(1_000_000 + i);

function workloads(): Workload[] {
  const gateways: Target[] = ['ours', 'hive-rust', 'hive'];
  const withDirect: Target[] = [...gateways, 'direct'];
  return [
    { query: 'flat', variant: 'identical', bodies: [body(FLAT_IDENTICAL)], targets: withDirect },
    // Names bench-000 … bench-1999: the first PROJECTS exist, the rest answer null (a lookup all the same).
    { query: 'flat', variant: 'varied', bodies: pick(VARIED, (i) => body(FLAT_VARIED, { name: `bench-${String(i).padStart(3, '0')}` })), targets: withDirect },
    { query: 'federated', variant: 'identical', bodies: [body(FEDERATED, { f: 5 })], targets: gateways },
    { query: 'federated', variant: 'varied', bodies: pick(VARIED, (i) => body(FEDERATED, { f: 1 + (i % RUNS_PER_PROJECT), a: afterAll(i) })), targets: gateways },
    { query: 'deep', variant: 'identical', bodies: [body(DEEP, { f: 5 })], targets: gateways },
    { query: 'deep', variant: 'varied', bodies: pick(VARIED, (i) => body(DEEP, { f: 1 + (i % RUNS_PER_PROJECT), a: afterAll(i) })), targets: gateways },
  ];
}

const progress = stderrProgress('bench:peers');

/**
 * Starts `script` (TypeScript, through scripts/register.js) as a child process and registers its
 * stop; a child that exits before the bench is done fails the bench.
 */
function spawnService(teardown: Teardown, name: string, script: string, env: NodeJS.ProcessEnv): ChildProcess {
  // KEELSON_BENCH_CPU_PROF=<dir>: each gateway writes a V8 CPU profile there when it stops (SIGTERM).
  const profile = process.env.KEELSON_BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.KEELSON_BENCH_CPU_PROF}`, `--cpu-prof-name=${name.replace(/\W+/g, '-')}.cpuprofile`] : [];
  const child = spawn(process.execPath, [...heapFlags(), ...profile, '-r', './scripts/register.js', script], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
  let stopping = false;
  child.on('exit', (code, signal) => {
    if (!stopping) progress(`${name} exited (code ${code}, signal ${signal}): ${stderr.trim()}`);
  });
  teardown.push(`stop ${name}`, async () => {
    stopping = true;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  });
  return child;
}

/** Posts `body` until the target answers it without errors (at most 60 s). */
async function ready(url: string, payload: string, headers: Record<string, string>, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited (${child.exitCode})`);
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: payload });
      const text = await res.text();
      if (res.status === 200 && !text.includes('"errors"')) return;
      last = `${res.status} ${text.slice(0, 300)}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not answer in 60 s: ${last}`);
}

/** Runs for every seeded project, with nodes: inserted straight into the runs tables (no workflow runs them). */
async function seedRuns(mesh: RunningMesh): Promise<void> {
  await mesh.runs.services.dataSource.query(
    `WITH r AS (
       INSERT INTO runs (id, workflow_name, title, definition, scope, project_id, project_name, status, cwd, artifacts_dir, temporal_workflow_id)
       SELECT gen_random_uuid(), 'bench', 'bench run ' || g, '{}'::jsonb, 'GLOBAL', p.id::uuid, p.name, 'SUCCEEDED', '/tmp', '/tmp', 'bench-' || p.id || '-' || g
       FROM unnest($1::text[], $2::text[]) AS p(id, name) CROSS JOIN generate_series(1, $3::int) AS g
       RETURNING id)
     INSERT INTO run_nodes (run_id, node_id, position, type, status)
     SELECT r.id, 'n' || n, n, 'bash', 'SUCCEEDED' FROM r CROSS JOIN generate_series(1, $4::int) AS n`,
    [...(await projectIdsAndNames(mesh)), RUNS_PER_PROJECT, NODES_PER_RUN],
  );
}

async function projectIdsAndNames(mesh: RunningMesh): Promise<[string[], string[]]> {
  const projects = await mesh.projects.services.projects.list();
  return [projects.map((p) => p.id), projects.map((p) => p.name)];
}

interface Cell {
  samplesMs: number[];
  completed: number;
  elapsedMs: number;
  perRoundRps: number[];
  /** Ours only: answers shared with an identical query in flight (its `keelson_gateway_coalesced_total`). */
  coalesced: number;
}

/** Our gateway's count of queries answered by an identical one in flight, from its `/metrics`. */
async function coalescedOf(url: string, headers: Record<string, string>): Promise<number> {
  const text = await (await fetch(url.replace(/\/graphql$/, '/metrics'), { headers })).text();
  const line = text.split('\n').find((l) => l.startsWith('keelson_gateway_coalesced_total '));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

async function measure(load: LoadClient, list: Workload[], urls: Record<Target, string>, headers: Record<Target, () => Promise<Record<string, string>>>) {
  const cells = new Map<string, Cell>();
  const cell = (key: string) => {
    let c = cells.get(key);
    if (!c) cells.set(key, (c = { samplesMs: [], completed: 0, elapsedMs: 0, perRoundRps: [], coalesced: 0 }));
    return c;
  };
  progress(`warm-up: ${WARMUP_MS} ms per workload and target at 20 connections`);
  for (const w of list) for (const t of w.targets) await load.mixed(urls[t], w.bodies, 20, WARMUP_MS, await headers[t]());
  for (let round = 0; round < ROUNDS; round++) {
    progress(`round ${round + 1}/${ROUNDS}`);
    for (const w of list) {
      for (const connections of CONNECTIONS) {
        // The target that goes first rotates per round: drift and noise fall on all alike.
        const order = w.targets.map((_, i) => w.targets[(i + round) % w.targets.length]!);
        for (const t of order) {
          const before = t === 'ours' ? await coalescedOf(urls.ours, await headers.ours()) : 0;
          const r = await load.mixed(urls[t], w.bodies, connections, CELL_MS, await headers[t]());
          const c = cell(`${w.query}/${w.variant}/${connections}/${t}`);
          if (t === 'ours') c.coalesced += (await coalescedOf(urls.ours, await headers.ours())) - before;
          c.samplesMs.push(...r.samplesMs);
          c.completed += r.completed;
          c.elapsedMs += r.elapsedMs;
          c.perRoundRps.push((r.completed / r.elapsedMs) * 1000);
        }
      }
    }
  }
  return cells;
}

/** Ratios of ours over each peer: above 1× for req/s is ours ahead. */
const PEERS = ['hive-rust', 'hive', 'direct'] as const;

function report(list: Workload[], cells: Map<string, Cell>): string {
  const rows: string[][] = [];
  const ratioRows: string[][] = [];
  const notes: string[] = [];
  const behind: string[] = [];
  let rustCells = 0;
  for (const w of list) {
    for (const connections of CONNECTIONS) {
      const stat = (t: Target) => {
        const c = cells.get(`${w.query}/${w.variant}/${connections}/${t}`);
        if (!c) return undefined;
        return { rps: (c.completed / c.elapsedMs) * 1000, p50: percentile(c.samplesMs, 50), p99: percentile(c.samplesMs, 99), mean: c.samplesMs.reduce((a, b) => a + b, 0) / c.samplesMs.length, min: Math.min(...c.perRoundRps), max: Math.max(...c.perRoundRps) };
      };
      for (const t of w.targets) {
        const s = stat(t);
        if (s) rows.push([w.query, w.variant, String(connections), t, fixed(s.rps, 0), `${fixed(s.min, 0)}–${fixed(s.max, 0)}`, fixed(s.mean, 2), fixed(s.p50, 2), fixed(s.p99, 2)]);
      }
      const ours = stat('ours');
      if (!ours) continue;
      const oursCell = cells.get(`${w.query}/${w.variant}/${connections}/ours`)!;
      if (oursCell.coalesced > 0) {
        notes.push(`${w.query} ${w.variant} @${connections}: ${fixed((oursCell.coalesced / oursCell.completed) * 100, 1)}% of ours' answers were an identical query's in flight (KEELSON_GATEWAY_COALESCE)`);
      }
      const peer = Object.fromEntries(PEERS.map((t) => [t, stat(t)]));
      const rps = (t: (typeof PEERS)[number]) => (peer[t] ? times(ours.rps / peer[t].rps) : '');
      const rust = peer['hive-rust'];
      ratioRows.push([w.query, w.variant, String(connections), rps('hive-rust'), rust ? times(ours.p50 / rust.p50) : '', rust ? times(ours.p99 / rust.p99) : '', rps('hive'), rps('direct')]);
      if (rust) {
        rustCells += 1;
        if (ours.rps < rust.rps) behind.push(`${w.query} ${w.variant} @${connections} ${times(ours.rps / rust.rps)}`);
      }
      const direct = peer.direct;
      if (direct && connections === 1) {
        const over = (t: Target) => (peer[t as (typeof PEERS)[number]] ? `, ${t} ${fixed(peer[t as (typeof PEERS)[number]]!.mean - direct.mean, 2)} ms` : '');
        notes.push(`${w.query} ${w.variant} @1: mean overhead over direct: ours ${fixed(ours.mean - direct.mean, 2)} ms${over('hive-rust')}${over('hive')}`);
      }
    }
  }
  return [
    table(['query', 'requests', 'conns', 'ours/hive-rust req/s', 'p50 ratio', 'p99 ratio', 'ours/hive req/s', 'ours/direct req/s'], ratioRows, ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right']),
    '',
    rustCells === 0
      ? '  target: ours ≥ 1.0× hive-rust on every cell → not measured (hive-rust left out)'
      : `  target: ours ≥ 1.0× hive-rust req/s on every cell → ${behind.length === 0 ? `met (${rustCells} cells)` : `MISSED on ${behind.length} of ${rustCells}: ${behind.join(', ')}`}`,
    ...notes.map((n) => `  ${n}`),
    '',
    table(['query', 'requests', 'conns', 'target', 'req/s', 'req/s per round', 'mean ms', 'p50 ms', 'p99 ms'], rows, ['left', 'left', 'right', 'left', 'right', 'right', 'right', 'right', 'right']),
  ].join('\n');
}

/** Ours on the varied reads alone at 20 connections, this run (what the mixed workload's cached figures are read against). */
function readOnlyRps(cells: Map<string, Cell>): Partial<Record<'federated' | 'deep', number>> {
  const rps = (query: string) => {
    const c = cells.get(`${query}/varied/20/ours`);
    return c ? (c.completed / c.elapsedMs) * 1000 : undefined;
  };
  const out: Partial<Record<'federated' | 'deep', number>> = {};
  for (const query of ['federated', 'deep'] as const) {
    const r = rps(query);
    if (r !== undefined) out[query] = r;
  }
  return out;
}

async function main(teardown: Teardown): Promise<string> {
  const mesh = await startBenchStack(teardown, progress);
  const load = startLoadClient();
  teardown.push('stop the load worker', () => load.close());

  progress(`seeding ${PROJECTS} projects (git init + commit each), then ${RUNS_PER_PROJECT} runs of ${NODES_PER_RUN} nodes each`);
  await seedProjects(mesh.projects.services, 0, PROJECTS, progress);
  await seedRuns(mesh);

  // The checked-in supergraph with the running subgraphs' URLs, for both gateways.
  let sdl = supergraphForPlanning(await readFile(supergraphPath(), 'utf8'));
  for (const [name, url] of Object.entries(mesh.subgraphUrls)) {
    sdl = sdl.replace(new RegExp(`@join__graph\\(name: "${name}", url: "[^"]*"\\)`), `@join__graph(name: "${name}", url: "${url}")`);
  }
  const supergraphFile = join(tmpdir(), `keelson-bench-supergraph-${process.pid}.graphql`);
  await writeFile(supergraphFile, sdl);
  teardown.push(`remove ${supergraphFile}`, () => rm(supergraphFile, { force: true }));

  // KEELSON_BENCH_ONLY=federated/varied,deep,mixed (query or query/requests) measures only those (profiling).
  const only = process.env.KEELSON_BENCH_ONLY?.split(',').filter(Boolean);
  const withMixed = !only || only.includes('mixed');
  const [oursPort, rustPort, hivePort, cachedPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  // The same database (API tokens) and home (the assertion key) as the mesh.
  const baseEnv: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: mesh.env.DATABASE_URL, KEELSON_HOME: mesh.env.KEELSON_HOME };
  const subgraphEnv = Object.fromEntries(Object.entries(mesh.subgraphUrls).map(([name, url]) => [`KEELSON_${name.toUpperCase()}_URL`, url]));
  progress(`our gateway (apps/gateway/main.ts) on :${oursPort}, Hive Gateway with the Rust planner on :${rustPort} and Hive Gateway on :${hivePort} (bench/hiveGateway.ts), each a process of its own`);
  const ours = spawnService(teardown, 'our gateway', 'apps/gateway/main.ts', {
    ...baseEnv,
    ...subgraphEnv,
    KEELSON_GATEWAY_PORT: String(oursPort),
    KEELSON_SUPERGRAPH_FILE: supergraphFile,
    KEELSON_LOG_LEVEL: 'warn',
    ...UNCACHED_GATEWAY,
  });
  // The mixed workload's second instance of ours, with the entity cache on (LISTEN on the same database).
  const cachedGateway = withMixed
    ? spawnService(teardown, 'our gateway with its cache', 'apps/gateway/main.ts', {
        ...baseEnv,
        ...subgraphEnv,
        KEELSON_GATEWAY_PORT: String(cachedPort),
        KEELSON_SUPERGRAPH_FILE: supergraphFile,
        KEELSON_LOG_LEVEL: 'warn',
        KEELSON_GATEWAY_CACHE: 'on',
        KEELSON_GATEWAY_CACHE_MAX_MB: String(CACHED_GATEWAY_MAX_MB),
      })
    : undefined;
  const hiveEnv = { ...process.env, KEELSON_BENCH_SUPERGRAPH: supergraphFile };
  const rust = spawnService(teardown, 'Hive Gateway Rust planner', 'bench/hiveGateway.ts', { ...hiveEnv, KEELSON_BENCH_PORT: String(rustPort), KEELSON_BENCH_HIVE_RUNTIME: 'router' });
  const hive = spawnService(teardown, 'Hive Gateway', 'bench/hiveGateway.ts', { ...hiveEnv, KEELSON_BENCH_PORT: String(hivePort), KEELSON_BENCH_HIVE_RUNTIME: 'stitching' });

  const bench = serviceIdentity(mesh.security.assertions, 'bench');
  const urls: Record<Target, string> = {
    ours: `http://127.0.0.1:${oursPort}/graphql`,
    'hive-rust': `http://127.0.0.1:${rustPort}/graphql`,
    hive: `http://127.0.0.1:${hivePort}/graphql`,
    direct: mesh.subgraphUrls.projects!,
  };
  const headers: Record<Target, () => Promise<Record<string, string>>> = {
    ours: async () => ({ authorization: `Bearer ${mesh.adminToken!.token}` }),
    'hive-rust': () => bench.headers(),
    hive: () => bench.headers(),
    direct: () => bench.headers(),
  };
  await ready(urls.ours, body(FLAT_IDENTICAL), await headers.ours(), ours);
  await ready(urls['hive-rust'], body(FLAT_IDENTICAL), await headers['hive-rust'](), rust);
  await ready(urls.hive, body(FLAT_IDENTICAL), await headers.hive(), hive);
  const cachedUrl = `http://127.0.0.1:${cachedPort}/graphql`;
  if (cachedGateway) await ready(cachedUrl, body(FLAT_IDENTICAL), await headers.ours(), cachedGateway);
  const list = workloads().filter((w) => !only || only.some((o) => o === w.query || o === `${w.query}/${w.variant}`));
  const targetsOnly = process.env.KEELSON_BENCH_TARGETS?.split(',').filter(Boolean) as Target[] | undefined;
  if (targetsOnly) for (const w of list) w.targets = w.targets.filter((t) => targetsOnly.includes(t));
  // Every target answers every workload with the same data before anything is timed.
  for (const w of list) {
    const answers = new Set<string>();
    for (const t of w.targets) {
      const res = await fetch(urls[t], { method: 'POST', headers: { 'content-type': 'application/json', ...(await headers[t]()) }, body: w.bodies[0] });
      const text = await res.text();
      if (res.status !== 200 || text.includes('"errors"')) throw new Error(`${t} ${w.query}: ${res.status} ${text.slice(0, 400)}`);
      answers.add(JSON.stringify((JSON.parse(text) as { data: unknown }).data));
    }
    if (answers.size !== 1) throw new Error(`${w.query} ${w.variant}: the targets answered differently:\n${[...answers].map((a) => a.slice(0, 300)).join('\n')}`);
  }

  const cells = await measure(load, list, urls, headers);
  const all = workloads();
  const variedOf = (query: Workload['query']) => all.find((w) => w.query === query && w.variant === 'varied')!.bodies;
  const mixedList = withMixed ? mixedWorkloads({ federated: variedOf('federated'), deep: variedOf('deep') }, (await projectIdsAndNames(mesh))[0]) : [];
  const mixedCells = withMixed
    ? await measureMixed(load, mixedList, { uncached: urls.ours, cached: cachedUrl }, headers.ours, { rounds: ROUNDS, cellMs: CELL_MS, warmupMs: WARMUP_MS, progress })
    : undefined;
  return [
    '',
    `Keelson Mesh bench:peers — node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} at the end`,
    `${PROJECTS} projects, ${RUNS_PER_PROJECT} runs each of ${NODES_PER_RUN} nodes; ${ROUNDS} interleaved rounds of ${CELL_MS} ms per cell, first target rotating`,
    `ours = apps/gateway/main.ts (auth on, API token); hive-rust = @graphql-hive/gateway with @graphql-hive/router-runtime (the Hive Router's Rust query planner);`,
    `hive = @graphql-hive/gateway (its default runtime); both Hive Gateways forward a caller assertion the bench signs; direct = projects subgraph`,
    `flat identical = ${FLAT_IDENTICAL}`,
    `flat varied    = ${FLAT_VARIED} ($name one of ${VARIED}, ${PROJECTS} exist)`,
    `federated      = ${FEDERATED}`,
    `deep           = ${DEEP}`,
    `(varied: $f 1–${RUNS_PER_PROJECT} and $a one of ${VARIED} cursors past every run; identical: $f 5)`,
    '',
    ...(list.length ? [report(list, cells), ''] : []),
    ...(mixedCells ? [reportMixed(mixedList, mixedCells, readOnlyRps(cells)), ''] : []),
  ].join('\n');
}

runBench(main, progress);
