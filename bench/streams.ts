// `npm run bench:streams`: commit → subscriber latency of a real event stream (`projectEvents`)
// through the gateway vs straight from the owning subgraph, next to a raw WebSocket echo and a
// Postgres LISTEN/NOTIFY round trip, in one run; then 1,000 subscribers on one stream. The mesh's
// subgraphs and the writer run in this process, the gateway in a process of its own (as `npm start`
// runs it), every receiver in a worker thread. Progress to stderr, the report to stdout.
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { createDataSource, EventLog, EventNotifier } from '@keelson/platform';
import { streams } from '@keelson/schema';
import { serviceIdentity, silentLogger } from '@keelson/service';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { runBench, startBenchStack, stderrProgress, type Teardown } from './benchStack';
import { now, startReceivers, type Receivers } from './receivers';
import { fixed, percentile, table, times } from './report';

const ROUNDS = Number(process.env.KEELSON_BENCH_ROUNDS ?? 5);
/** Commits (or echoes, or notifications) per target and round. */
const SAMPLES = Number(process.env.KEELSON_BENCH_SAMPLES ?? 40);
const FANOUT = Number(process.env.KEELSON_BENCH_SUBSCRIBERS ?? 1_000);
const FANOUT_COMMITS = 10;
/** Sockets opened at once while connecting the fan-out's subscribers. */
const OPEN_PARALLEL = 10;
const HOP_CHANNEL = 'keelson_bench_hop';
const SUBSCRIPTION = 'subscription Bench($after: String) { projectEvents(after: $after) { cursor type lockId } }';

const progress = stderrProgress('bench:streams');

/**
 * The writer: a connection of the bench's own appending to the `projects` stream through the mesh's
 * EventLog, one transaction per event. A commit's time is taken right before COMMIT is sent: what
 * is measured is commit → NOTIFY → the tail's read → graphql-ws (→ gateway) → the subscriber.
 */
async function startWriter(teardown: Teardown, databaseUrl: string) {
  const { dataSource } = createDataSource({ url: databaseUrl, entities: [], migrations: [], migrationsTableName: 'bench_migrations', log: silentLogger(), poolSize: 1 });
  await dataSource.initialize();
  teardown.push('close the writer', () => dataSource.destroy());
  // The notifier is the tails' side; appending never listens.
  const events = new EventLog(dataSource, new EventNotifier({ url: databaseUrl, log: silentLogger() }));
  const runner = dataSource.createQueryRunner();
  await runner.connect();
  teardown.push('release the writer connection', () => runner.release());
  const projectId = randomUUID();
  let cursor: string | null = null;

  /** One transaction: `work` inside, `now()` right before COMMIT. */
  const transaction = async <T>(work: () => Promise<T>) => {
    await runner.startTransaction();
    const result = await work();
    const at = now();
    await runner.commitTransaction();
    return { result, at };
  };

  return {
    get cursor() {
      return cursor;
    },
    /** Commits one event and resolves with its delivery times relative to the commit. */
    async commit(receivers: Receivers): Promise<{ firstMs: number; lastMs: number }> {
      let delivery: Promise<{ first: number; last: number }> | undefined;
      const { at } = await transaction(async () => {
        const event = await events.append(runner.manager, {
          stream: streams.projects,
          key: projectId,
          type: 'MUTATION_LOCK_ACQUIRED',
          payload: { projectId, lockId: randomUUID() },
          actor: null,
        });
        cursor = event.cursor;
        delivery = receivers.delivered(event.cursor);
      });
      const d = await delivery!;
      return { firstMs: d.first - at, lastMs: d.last - at };
    },
    /** Commits one bare NOTIFY on the bench's own channel: the hop every event's wake-up takes. */
    async notify(receivers: Receivers, tag: string): Promise<number> {
      const delivery = receivers.delivered(tag);
      const { at } = await transaction(() => runner.query('SELECT pg_notify($1, $2)', [HOP_CHANNEL, tag]));
      return (await delivery).last - at;
    },
  };
}

type Writer = Awaited<ReturnType<typeof startWriter>>;
type Target = 'gateway' | 'direct' | 'echo' | 'notify';

interface Endpoints {
  gateway: { url: string; connectionParams: () => Promise<Record<string, string>> };
  direct: { url: string; connectionParams: () => Promise<Record<string, string>> };
  echo: string;
  databaseUrl: string;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Opens `count` subscribers on `target` after the writer's last event and waits until a first commit reaches all of them. */
async function subscribe(receivers: Receivers, writer: Writer, endpoint: Endpoints['gateway'], count: number): Promise<void> {
  await receivers.run({
    kind: 'open',
    url: endpoint.url,
    connectionParams: await endpoint.connectionParams(),
    query: SUBSCRIPTION,
    variables: { after: writer.cursor },
    count,
    parallel: OPEN_PARALLEL,
    keyFields: ['cursor'],
  });
  // A socket is acknowledged before its subscription reaches the owner's tail: one delivered commit says all are live.
  await writer.commit(receivers);
}

/** `SAMPLES` commit → delivery latencies (ms) on one target, one commit at a time. */
async function sampleTarget(target: Target, receivers: Receivers, writer: Writer, endpoints: Endpoints, round: number): Promise<number[]> {
  const samples: number[] = [];
  if (target === 'echo') {
    const reply = await receivers.run({ kind: 'echo', url: endpoints.echo, count: SAMPLES });
    return reply.kind === 'echo' ? reply.samplesMs : [];
  }
  if (target === 'notify') {
    await receivers.run({ kind: 'listen', databaseUrl: endpoints.databaseUrl, channel: HOP_CHANNEL });
    for (let i = 0; i < SAMPLES; i++) {
      samples.push(await writer.notify(receivers, `${round}-${i}`));
      await pause(2);
    }
    await receivers.run({ kind: 'unlisten' });
    return samples;
  }
  await subscribe(receivers, writer, endpoints[target], 1);
  for (let i = 0; i < SAMPLES; i++) {
    samples.push((await writer.commit(receivers)).lastMs);
    await pause(2);
  }
  await receivers.run({ kind: 'close' });
  return samples;
}

/** An echo server on loopback: the floor of any WebSocket delivery on this machine, in the subgraphs' process. */
async function startEchoServer(teardown: Teardown): Promise<string> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => wss.once('listening', resolve));
  wss.on('connection', (socket) => socket.on('message', (data, binary) => socket.send(data, { binary })));
  teardown.push('stop the echo server', () => new Promise((resolve) => wss.close(() => resolve())));
  return `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`;
}

async function main(teardown: Teardown): Promise<string> {
  // The gateway in a process of its own, as `npm start` runs it; 1,000 sockets of one token allowed.
  const mesh = await startBenchStack(teardown, progress, {
    gateway: 'process',
    env: { KEELSON_MAX_CONNECTIONS_PER_CREDENTIAL: String(FANOUT + 10), KEELSON_LOG_LEVEL: 'warn' },
  });
  const receivers = startReceivers(teardown);
  const writer = await startWriter(teardown, mesh.env.DATABASE_URL);
  const bench = serviceIdentity(mesh.security.assertions, 'bench');
  const endpoints: Endpoints = {
    gateway: { url: mesh.gatewayWsUrl, connectionParams: async () => ({ authorization: `Bearer ${mesh.adminToken!.token}` }) },
    direct: { url: mesh.projects.wsUrl, connectionParams: () => bench.connectionParams() },
    echo: await startEchoServer(teardown),
    databaseUrl: mesh.env.DATABASE_URL,
  };

  const targets: Target[] = ['gateway', 'direct', 'echo', 'notify'];
  const samples = new Map<Target, number[]>(targets.map((t) => [t, []]));
  progress(`warm-up: one round of every target`);
  for (const t of targets) await sampleTarget(t, receivers, writer, endpoints, -1);
  for (let round = 0; round < ROUNDS; round++) {
    progress(`round ${round + 1}/${ROUNDS}`);
    // The target that goes first rotates per round: drift and noise fall on all alike.
    for (const t of targets.map((_, i) => targets[(i + round) % targets.length]!)) {
      samples.get(t)!.push(...(await sampleTarget(t, receivers, writer, endpoints, round)));
    }
  }

  const fanout = new Map<'gateway' | 'direct', { first: number[]; last: number[] } | { failed: string }>();
  for (const t of ['direct', 'gateway'] as const) {
    progress(`${FANOUT} subscribers through ${t}: connecting`);
    try {
      await subscribe(receivers, writer, endpoints[t], FANOUT);
      const first: number[] = [];
      const last: number[] = [];
      for (let i = 0; i < FANOUT_COMMITS; i++) {
        const d = await writer.commit(receivers);
        first.push(d.firstMs);
        last.push(d.lastMs);
        await pause(20);
      }
      fanout.set(t, { first, last });
    } catch (err) {
      // A fan-out the target cannot carry is a result too: it is reported, and the other target still runs.
      progress(`${FANOUT} subscribers through ${t} failed: ${(err as Error).message}`);
      fanout.set(t, { failed: (err as Error).message.slice(0, 300) });
    }
    progress(`${FANOUT} subscribers through ${t}: closing`);
    await receivers.run({ kind: 'close' });
  }
  return report(samples, fanout);
}

function report(samples: Map<Target, number[]>, fanout: Map<'gateway' | 'direct', { first: number[]; last: number[] } | { failed: string }>): string {
  const s = (t: Target) => {
    const xs = samples.get(t)!;
    return { n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), mean: xs.reduce((a, b) => a + b, 0) / xs.length };
  };
  const labels: Record<Target, string> = {
    gateway: 'gateway (graphql-ws, own process)',
    direct: 'projects subgraph directly',
    echo: 'raw WebSocket echo (round trip)',
    notify: 'pg NOTIFY hop (commit → listener)',
  };
  const rows = (['gateway', 'direct', 'echo', 'notify'] as const).map((t) => {
    const x = s(t);
    return [labels[t], String(x.n), fixed(x.p50, 2), fixed(x.p99, 2), fixed(x.mean, 2)];
  });
  const [gw, direct, echo, hop] = [s('gateway'), s('direct'), s('echo'), s('notify')];
  const budget = 3 * echo.p99 + hop.p99;
  const fanRows = [...fanout].map(([t, f]) =>
    'failed' in f ? [t, String(FANOUT), `failed: ${f.failed}`] : [t, String(FANOUT), String(f.last.length), fixed(percentile(f.first, 50), 1), fixed(percentile(f.last, 50), 1), fixed(Math.max(...f.last), 1)],
  );
  const gwFan = fanout.get('gateway')!;
  const gwLast = 'failed' in gwFan ? [NaN] : gwFan.last;
  return [
    '',
    `Keelson Mesh bench:streams — node ${process.version}, ${cpus().length} CPUs, load average ${loadavg()[0]!.toFixed(2)} at the end`,
    `stream: projectEvents (${SUBSCRIPTION}); one event per transaction, timed from right before COMMIT to arrival at the subscriber`,
    `${ROUNDS} interleaved rounds of ${SAMPLES} samples per target, first target rotating; receivers in a worker thread`,
    '',
    table(['commit → delivery', 'samples', 'p50 ms', 'p99 ms', 'mean ms'], rows, ['left', 'right', 'right', 'right', 'right']),
    '',
    `  gateway/direct: p50 ${times(gw.p50 / direct.p50)}, p99 ${times(gw.p99 / direct.p99)}; gateway/echo p99 ${times(gw.p99 / echo.p99)}`,
    `  target: gateway p99 ≤ 3 × echo p99 + NOTIFY hop p99 = ${fixed(budget, 2)} ms → ${fixed(gw.p99, 2)} ms: ${gw.p99 <= budget ? 'met' : 'MISSED'}`,
    '',
    table(['fan-out', 'subscribers', 'commits', 'first p50 ms', 'last p50 ms', 'last max ms'], fanRows, ['left', 'right', 'right', 'right', 'right', 'right']),
    '',
    `  target: ${FANOUT} subscribers through the gateway, commit → last delivery ≤ 50 ms → p50 ${fixed(percentile(gwLast, 50), 1)} ms, max ${fixed(Math.max(...gwLast), 1)} ms: ${Math.max(...gwLast) <= 50 ? 'met' : 'MISSED'}`,
    '',
  ].join('\n');
}

runBench(main, progress);
