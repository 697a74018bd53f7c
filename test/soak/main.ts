/**
 * `npm run test:soak [-- --minutes N] [--samples file.json]`: `npm start` under steady mixed load for N minutes (default
 * 30), sampled every 5 s, a table every 30 s on stderr, the verdict on stdout. Exit 0 on a pass, 1
 * on a fail, 130 on Ctrl-C (everything stopped and the database dropped first).
 */
import { writeFile } from 'node:fs/promises';
import { bearer, registerCredentials } from '../support/client';
import { judge } from './judge';
import { LoadStats, startLoad } from './load';
import { startSoakMesh, type SoakMesh } from './meshProcess';
import { createOps } from './ops';
import { startSampler, type Sample, type Sampler } from './sampler';
import { startSubscribers, type Subscribers } from './subscribers';

/** `--samples <file>`: where to write every sample as JSON (for a closer look at a resource). */
function samplesArg(argv: string[]): string | undefined {
  const i = argv.indexOf('--samples');
  return i < 0 ? undefined : argv[i + 1];
}

function minutesArg(argv: string[]): number {
  const i = argv.indexOf('--minutes');
  if (i < 0) return 30;
  const n = Number(argv[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--minutes: expected a positive number, received ${JSON.stringify(argv[i + 1])}`);
  return n;
}

const mb = (b: number | undefined) => (b === undefined ? '-' : (b / 1024 / 1024).toFixed(1));

/** The table of the latest sample; the heap column is what was live after the process's last full GC. */
function table(samples: Sample[], stats: LoadStats): string {
  const sample = samples.at(-1)!;
  const rows = [`t=${sample.t.toFixed(0)}s  cursor lag ${sample.cursorLag}  live-tail lag ${sample.tailLag}`, 'process   cpu%   rss MB  outside V8 heap MB  heap MB (live after full GC)  handles  fds  pg'];
  for (const [name, p] of Object.entries(sample.processes)) {
    rows.push(
      `${name.padEnd(9)} ${p.cpu.toFixed(1).padStart(5)} ${mb(p.rss).padStart(8)} ${mb(p.offHeap).padStart(19)} ${mb(p.heap).padStart(29)} ${String(p.handles ?? '-').padStart(8)} ${String(p.fds).padStart(4)} ${String(p.pg).padStart(3)}`,
    );
  }
  rows.push('operation           count   p50 ms   p99 ms');
  for (const o of stats.percentiles()) rows.push(`${o.op.padEnd(18)} ${String(o.count).padStart(6)} ${o.p50.toFixed(0).padStart(8)} ${o.p99.toFixed(0).padStart(8)}`);
  rows.push(`errors: ${stats.errors.length}`);
  return rows.join('\n');
}

async function main(): Promise<number> {
  const minutes = minutesArg(process.argv.slice(2));
  const durationMs = minutes * 60_000;
  let mesh: SoakMesh | undefined;
  let subscribers: Subscribers | undefined;
  let sampler: Sampler | undefined;
  let load: { stop(): Promise<void> } | undefined;
  let timers: NodeJS.Timeout[] = [];
  let stopping: Promise<void> | undefined;
  let interrupted = false;
  const stopAll = () =>
    (stopping ??= (async () => {
      for (const t of timers) clearInterval(t);
      timers = [];
      // After Ctrl-C nobody waits for a gated run to finish: the load gets 5 s, then the mesh stops under it.
      await Promise.race([load?.stop().catch(() => undefined), new Promise((r) => setTimeout(r, interrupted ? 5_000 : 600_000))]);
      await subscribers?.close().catch(() => undefined);
      await sampler?.close().catch(() => undefined);
      const left = (await mesh?.stop()) ?? [];
      if (left.length) process.stderr.write(`soak: ended what outlived the mesh: ${left.join(', ')}\n`);
    })());
  const interrupt = new Promise<void>((resolve) =>
    process.once('SIGINT', () => {
      interrupted = true;
      process.stderr.write('\nsoak: Ctrl-C, stopping the load, the subscribers and the mesh\n');
      resolve();
    }),
  );
  const wait = (ms: number) => Promise.race([new Promise((r) => setTimeout(r, ms)), interrupt]);
  try {
    process.stderr.write(`soak: starting npm start for a ${minutes}-minute soak\n`);
    mesh = await startSoakMesh();
    if (interrupted) return 130;
    const url = mesh.install.gatewayUrl;
    registerCredentials(url, bearer(mesh.token));
    const stats = new LoadStats();
    const ops = await createOps(url);
    subscribers = await startSubscribers(url.replace(/^http/, 'ws'), mesh.token);
    const t0 = Date.now();
    sampler = await startSampler({ databaseUrl: mesh.db.url, databaseName: mesh.db.name, token: mesh.token, metricsUrls: mesh.metricsUrls, processes: mesh.processes, t0 });
    const s = sampler;
    const sampleNow = () => void s.sample().catch((err: unknown) => stats.error('sample', err));
    sampleNow();
    timers.push(setInterval(sampleNow, 5_000));
    timers.push(setInterval(() => s.samples.length && process.stderr.write(`\n${table(s.samples, stats)}\n`), 30_000));
    load = startLoad(ops, stats);
    await wait(durationMs);
    if (interrupted) return 130;
    for (const t of timers) clearInterval(t);
    await load.stop();
    await s.sample();
    process.stderr.write(`\n${table(s.samples, stats)}\n`);
    const samplesFile = samplesArg(process.argv.slice(2));
    if (samplesFile) await writeFile(samplesFile, JSON.stringify(s.samples));
    const checks = await subscribers.check(mesh.db.url);
    const verdict = judge({
      durationS: (Date.now() - t0) / 1000,
      errors: [...stats.errors, ...subscribers.failures(), ...subscribers.badEvents()],
      subscribers: checks,
      series: s.series(),
    });
    process.stdout.write(`\nsoak verdict after ${minutes} minutes (${s.samples.length} samples, ${subscribers.count} subscriptions):\n${verdict.lines.join('\n')}\n`);
    for (const e of verdict.errors.slice(0, 20)) process.stdout.write(`error: ${e}\n`);
    process.stdout.write(verdict.ok ? 'soak: PASS\n' : 'soak: FAIL\n');
    return verdict.ok ? 0 : 1;
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`soak: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
