// `npm run bench:start`: throughput of `{ projects { id name } }` at 20 connections through a real
// `npm start` (apps/mesh/main.ts, its gateway in a child process) vs a standalone gateway process
// (apps/gateway/main.ts) over the same subgraphs vs the projects subgraph directly, rounds
// interleaved; then Ctrl-C (SIGINT to the start's process group) and a check that nothing is left.
// `npm run bench:start -- crash` instead kills the start's gateway process and shows the start
// report it and exit 1. Throwaway database, home and ports; progress to stderr, the report to stdout.
// See bench/README.md.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, heapFlags, loadAssertionKey, serviceIdentity } from '@keelson/service';
import { findTemporalCli, TEMPORAL_CLI_VERSION } from '@keelson/temporal';
import { createTestDatabase } from '../test/support/db';
import { benchRounds, runBench, stderrProgress, UNCACHED_GATEWAY, type Teardown } from './benchStack';
import { startLoadClient } from './loadClient';

const { rounds: ROUNDS, cellMs: CELL_MS } = benchRounds({ rounds: 5, cellMs: 2_000 });
const WARMUP_MS = 1_500;
const CONNECTIONS = 20;
const PROJECTS = 10;
const QUERY = '{ projects { id name } }';
/** What `npm start` prints once everything is up. */
const READY_LINE = 'Press Ctrl-C to stop.';
const START_TIMEOUT_MS = 240_000;
const SERVICES = ['GATEWAY', 'PROJECTS', 'RIBS', 'RUNS', 'SESSIONS', 'MEMORY', 'IDENTITY', 'SWARMS', 'TEMPORAL', 'TEMPORAL_UI', 'WORKER_METRICS'];

const mode = process.argv[2] === 'crash' ? 'crash' : 'bench';
const progress = stderrProgress('bench:start');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const nodeArgs = (script: string) => [...heapFlags(), '-r', './scripts/register.js', script];

/** Resolves once `done()` holds, failing after `timeoutMs` or as soon as `child` exits. */
async function waitFor(what: string, child: ChildProcess, timeoutMs: number, done: () => boolean | Promise<boolean>, output = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await done()) return;
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${what}: the process exited (${child.exitCode ?? child.signalCode}) first\n${output()}`);
    if (Date.now() > deadline) throw new Error(`${what}: not ready after ${timeoutMs / 1000} s\n${output()}`);
    await sleep(200);
  }
}

/** The node processes whose command line names `dir` (what a start left running). */
function processesOf(dir: string): string[] {
  const ps = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' });
  return ps.split('\n').filter((line) => line.includes(dir) && !line.includes(`ps -eo`));
}

async function main(teardown: Teardown): Promise<string> {
  const cli = await findTemporalCli();
  if (!cli) throw new Error(`bench:start needs the Temporal CLI: run \`npm start\` once (it builds it) or go install github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`);
  progress('Postgres: creating a throwaway database');
  const db = await createTestDatabase('keelson_bench_start');
  teardown.push(`drop database ${db.name}`, () => db.drop());
  const dir = await mkdtemp(join(tmpdir(), 'keelson-bench-start-'));
  teardown.push(`remove ${dir}`, () => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'gitconfig'), '[user]\n\tname = Keelson Bench\n\temail = bench@keelson.invalid\n[init]\n\tdefaultBranch = main\n');

  const ports: Record<string, string> = {};
  for (const name of SERVICES) ports[`KEELSON_${name}_PORT`] = String(await freePort());
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${join(cli, '..')}:${process.env.PATH ?? ''}`,
    DATABASE_URL: db.url,
    KEELSON_HOME: join(dir, 'home'),
    KEELSON_WORKSPACE: join(dir, 'workspace'),
    GIT_CONFIG_GLOBAL: join(dir, 'gitconfig'),
    GIT_CONFIG_NOSYSTEM: '1',
    KEELSON_MEMORY_COMPACTION_INTERVAL_MS: '0',
    KEELSON_LOG_LEVEL: 'warn',
    ...UNCACHED_GATEWAY,
    ...ports,
  };
  delete env.TEMPORAL_ADDRESS;

  progress('npm start: starting apps/mesh/main.ts (its own Temporal dev server, its gateway in a child process)');
  const start = spawn(process.execPath, nodeArgs('apps/mesh/main.ts'), { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  start.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  start.stderr!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => start.once('exit', (code) => resolve(code)));
  teardown.push('stop npm start (SIGINT to its group, SIGKILL after 20 s)', async () => {
    if (start.exitCode !== null || start.signalCode !== null) return;
    process.kill(-start.pid!, 'SIGINT');
    const timer = setTimeout(() => process.kill(-start.pid!, 'SIGKILL'), 20_000);
    await exited;
    clearTimeout(timer);
  });
  await waitFor('npm start', start, START_TIMEOUT_MS, () => out.includes(READY_LINE), () => out);
  const gatewayUrl = /GraphQL \(HTTP \+ WebSocket\): (https?:\/\/[^\s"]+)/.exec(out)?.[1];
  if (!gatewayUrl) throw new Error(`npm start did not print its GraphQL URL:\n${out}`);
  const report: string[] = [`Keelson Mesh bench:start — node ${process.version}, load average ${loadavg()[0]!.toFixed(2)} at the start`];
  report.push(...out.split('\n').filter((l) => /GraphQL|Gateway|Temporal UI/.test(l)));
  const children = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(start.pid)], { encoding: 'utf8' }).trim();
  report.push('children of npm start:', children);

  if (mode === 'crash') {
    const gatewayChild = children.split('\n').find((l) => l.includes('apps/gateway/main.ts'));
    if (!gatewayChild) throw new Error(`npm start has no gateway child process:\n${children}`);
    const pid = Number(gatewayChild.trim().split(/\s+/)[0]);
    progress(`crash: kill -9 of the gateway child ${pid}`);
    process.kill(pid, 'SIGKILL');
    const code = await exited;
    report.push(`kill -9 of the gateway child ${pid}: npm start exited ${code}; the end of its output:`, ...out.split('\n').slice(-25));
    return report.join('\n') + '\n';
  }

  const token = (await readFile(join(dir, 'home', 'token'), 'utf8')).trim();
  const auth = { authorization: `Bearer ${token}` };
  progress(`creating ${PROJECTS} projects through npm start's gateway`);
  for (let i = 0; i < PROJECTS; i++) {
    const res = await fetch(gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ query: `mutation { createProject(input: { name: "bench-${i}" }) { id } }` }),
    });
    const body = (await res.json()) as { errors?: unknown };
    if (res.status !== 200 || body.errors) throw new Error(`createProject bench-${i}: ${res.status} ${JSON.stringify(body)}`);
  }

  const standalonePort = await freePort();
  progress(`standalone gateway (apps/gateway/main.ts) on :${standalonePort}`);
  const standalone = spawn(process.execPath, nodeArgs('apps/gateway/main.ts'), { env: { ...env, KEELSON_GATEWAY_PORT: String(standalonePort) }, stdio: 'ignore' });
  const stopStandalone = async () => {
    if (standalone.exitCode !== null || standalone.signalCode !== null) return;
    const gone = new Promise((resolve) => standalone.once('exit', resolve));
    standalone.kill('SIGTERM');
    await gone;
  };
  teardown.push('stop the standalone gateway', stopStandalone);
  await waitFor('standalone gateway', standalone, 60_000, async () => {
    try {
      return (await fetch(`http://127.0.0.1:${standalonePort}/health`)).ok;
    } catch {
      return false;
    }
  });

  const svc = serviceIdentity(loadAssertionKey(undefined, join(dir, 'home')), 'bench');
  const load = startLoadClient();
  teardown.push('stop the load worker', () => load.close());
  const targets: { name: string; url: string; headers: () => Promise<Record<string, string>> }[] = [
    { name: 'npm start', url: gatewayUrl, headers: async () => auth },
    { name: 'standalone', url: `http://127.0.0.1:${standalonePort}/graphql`, headers: async () => auth },
    { name: 'direct', url: `http://127.0.0.1:${ports.KEELSON_PROJECTS_PORT}/graphql`, headers: () => svc.headers() },
  ];
  progress('warm-up: every target once');
  for (const t of targets) await load.throughput(t.url, QUERY, CONNECTIONS, WARMUP_MS, await t.headers());
  const rps = new Map<string, number[]>(targets.map((t) => [t.name, []]));
  for (let round = 0; round < ROUNDS; round++) {
    progress(`round ${round + 1}/${ROUNDS}`);
    for (let i = 0; i < targets.length; i++) {
      const t = targets[(i + round) % targets.length]!;
      const r = await load.throughput(t.url, QUERY, CONNECTIONS, CELL_MS, await t.headers());
      if (r.completed === 0) throw new Error(`${t.name}: no request answered in round ${round + 1}`);
      rps.get(t.name)!.push((r.completed / r.elapsedMs) * 1000);
    }
  }
  const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
  report.push('', `${QUERY} at ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${CELL_MS} ms, the first target rotating:`);
  for (const [name, list] of rps) report.push(`  ${name.padEnd(11)} ${mean(list).toFixed(0).padStart(6)} req/s (rounds ${list.map((x) => x.toFixed(0)).join(', ')})`);
  const of = (name: string) => mean(rps.get(name)!);
  report.push(`  npm start / standalone ${(of('npm start') / of('standalone')).toFixed(2)}×; npm start / direct ${(of('npm start') / of('direct')).toFixed(2)}× (target ≥ 0.8× standalone)`);

  await stopStandalone();
  progress('Ctrl-C: SIGINT to the start process group');
  process.kill(-start.pid!, 'SIGINT');
  const code = await exited;
  await sleep(1_000);
  const left = processesOf(dir);
  report.push('', `Ctrl-C: npm start exited ${code}; the end of its output:`, ...out.trim().split('\n').slice(-6), `left running: ${left.length ? left.join('\n') : 'none'}`);
  return report.join('\n') + '\n';
}

runBench(main, progress);
