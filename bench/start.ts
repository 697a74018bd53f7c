// `npm run bench:start`: throughput of `{ projects { id name } }` at 20 connections through a real
// `npm start` (apps/mesh/main.ts, its gateway in a child process) vs a standalone gateway process
// (apps/gateway/main.ts) over the same subgraphs vs the projects subgraph directly, rounds
// interleaved; then Ctrl-C (SIGINT to the start's process group) and a check that nothing is left.
// `bench:start -- crash` instead kills the start's gateway process and shows the start report it and
// exit 1. Throwaway database, home and ports; the report goes to stdout.
import { spawn, execSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { freePort, heapFlags } from '@keelson/service';
import { findTemporalCli } from '@keelson/temporal';
import { serviceIdentity, loadAssertionKey } from '@keelson/service';
import { createTestDatabase } from '../test/support/db';
import { startLoadClient } from './loadClient';

const root = '/work/wt/perf';
async function main() {
  const mode = process.argv[2] ?? 'bench';
  const dir = mkdtempSync(join(tmpdir(), 'perfstart-'));
  const db = await createTestDatabase('keelson_bench_start');
  const names = ['GATEWAY', 'PROJECTS', 'RIBS', 'RUNS', 'SESSIONS', 'MEMORY', 'IDENTITY', 'SWARMS', 'TEMPORAL', 'TEMPORAL_UI', 'WORKER_METRICS'];
  const ports: Record<string, string> = {};
  for (const n of names) ports[`KEELSON_${n}_PORT`] = String(await freePort());
  writeFileSync(join(dir, 'gitconfig'), '[user]\n\tname = P\n\temail = p@x.invalid\n[init]\n\tdefaultBranch = main\n');
  const cli = (await findTemporalCli())!;
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${join(cli, '..')}:${process.env.PATH}`, DATABASE_URL: db.url, KEELSON_HOME: join(dir, 'home'), KEELSON_WORKSPACE: join(dir, 'ws'), GIT_CONFIG_GLOBAL: join(dir, 'gitconfig'), GIT_CONFIG_NOSYSTEM: '1', KEELSON_MEMORY_COMPACTION_INTERVAL_MS: '0', KEELSON_LOG_LEVEL: 'warn', ...ports };
  delete env.TEMPORAL_ADDRESS;
  const child = spawn(process.execPath, [...heapFlags(), '-r', './scripts/register.js', 'apps/mesh/main.ts'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c));
  child.stderr!.on('data', (c: Buffer) => (out += c));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const t0 = Date.now();
  while (!out.includes('Press Ctrl-C to stop.')) {
    if (child.exitCode !== null) throw new Error(out);
    if (Date.now() - t0 > 240_000) throw new Error('timeout ' + out);
    await new Promise((r) => setTimeout(r, 200));
  }
  const gw = out.match(/GraphQL \(HTTP \+ WebSocket\): (\S+)/)![1]!;
  console.log(out.split('\n').filter((l) => l.includes('GraphQL') || l.includes('Gateway') || l.includes('Admin token') || l.includes('Temporal UI')).join('\n'));
  const token = readFileSync(join(dir, 'home', 'token'), 'utf8').trim();
  const auth = { authorization: `Bearer ${token}` };
  const children = execSync(`ps -o pid=,args= --ppid ${child.pid}`).toString();
  console.log('children of npm start:\n' + children);
  const gatewayChild = children.split('\n').find((l) => l.includes('apps/gateway/main.ts'));
  if (mode === 'crash') {
    const pid = Number(gatewayChild!.trim().split(/\s+/)[0]);
    console.log(`kill -9 gateway child ${pid}`);
    process.kill(pid, 'SIGKILL');
    const code = await exited;
    console.log(`npm start exited ${code}; output tail:\n${out.split('\n').slice(-25).join('\n')}`);
    await db.drop();
    return;
  }
  for (let i = 0; i < 10; i++) {
    const res = await fetch(gw, { method: 'POST', headers: { 'content-type': 'application/json', ...auth }, body: JSON.stringify({ query: `mutation { createProject(input: { name: "p${i}" }) { id } }` }) });
    if (res.status !== 200) throw new Error(await res.text());
  }
  // A standalone gateway process over the same subgraphs.
  const sport = await freePort();
  const standalone = spawn(process.execPath, [...heapFlags(), '-r', './scripts/register.js', 'apps/gateway/main.ts'], { cwd: root, env: { ...env, KEELSON_GATEWAY_PORT: String(sport) }, stdio: 'ignore' });
  const sUrl = `http://127.0.0.1:${sport}/graphql`;
  for (;;) { try { if ((await fetch(`http://127.0.0.1:${sport}/health`)).ok) break; } catch {} await new Promise((r) => setTimeout(r, 200)); }
  const direct = `http://127.0.0.1:${ports.KEELSON_PROJECTS_PORT}/graphql`;
  const svc = serviceIdentity(loadAssertionKey(undefined, join(dir, 'home')), 'bench');
  const load = startLoadClient();
  const q = '{ projects { id name } }';
  const targets: [string, string, () => Promise<Record<string, string>>][] = [['npm start', gw, async () => auth], ['standalone', sUrl, async () => auth], ['direct', direct, () => svc.headers()]];
  const res: Record<string, number[]> = {};
  for (const [, u, h] of targets) await load.throughput(u, q, 20, 1500, await h());
  for (let round = 0; round < 5; round++) {
    for (let i = 0; i < 3; i++) {
      const [n, u, h] = targets[(i + round) % 3]!;
      const r = await load.throughput(u, q, 20, 2000, await h());
      (res[n] ??= []).push((r.completed / r.elapsedMs) * 1000);
    }
  }
  await load.close();
  const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
  for (const [n, a] of Object.entries(res)) console.log(`${n.padEnd(11)} ${mean(a).toFixed(0)} rps (rounds ${a.map((x) => x.toFixed(0)).join(', ')})`);
  console.log(`npm start / standalone ${(mean(res['npm start']!) / mean(res.standalone!)).toFixed(2)}x; npm start / direct ${(mean(res['npm start']!) / mean(res.direct!)).toFixed(2)}x; load ${loadavg()[0]!.toFixed(1)}`);
  standalone.kill('SIGTERM');
  process.kill(-child.pid!, 'SIGINT');
  const code = await exited;
  await new Promise((r) => setTimeout(r, 1000));
  console.log(`Ctrl-C: exit ${code}; tail:\n${out.split('\n').slice(-6).join('\n')}`);
  console.log('left:', execSync(`ps -eo pid,args | grep -F "${dir}" | grep -v grep || true`).toString() || 'none');
  await db.drop();
}
main().catch((e) => { console.error(e); process.exit(1); });
