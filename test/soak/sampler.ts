import { readdir, readFile, readlink } from 'node:fs/promises';
import { Client as PgClient } from 'pg';
import type { Series, ResourceKind } from './judge';
import type { Watched } from './meshProcess';

/** One process's figures at one sample (undefined where the process does not serve them). */
export interface ProcessSample {
  cpu: number;
  rss: number;
  fds: number;
  pg: number;
  /** The heap live after the last full garbage collection (`keelson_heap_live_bytes`), once one has run. */
  heap?: number;
  /**
   * The resident set outside V8's heap: RSS less the heap's resident pages (`keelson_heap_resident_bytes`,
   * read with it). V8 grows and shrinks its young generation by its semi-space size (64 MB under
   * `npm start`) as it sees fit, which moves RSS by up to twice that with nothing leaked; what a leak
   * of native memory (buffers, sockets, addons) grows is this, and what leaks in the heap shows in `heap`.
   */
  offHeap?: number;
  handles?: number;
}

export interface Sample {
  t: number;
  processes: Record<string, ProcessSample>;
  /** Events committed past the furthest-behind durable consumer's cursor. */
  cursorLag: number;
  /** The worst live tail's lag (`keelson_event_log_lag_events`) over the mesh and the gateway. */
  tailLag: number;
}

const ticksPerSecond = 100;
const pageSize = 4096;

async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

async function rssBytes(pid: number): Promise<number> {
  const statm = await readFile(`/proc/${pid}/statm`, 'utf8');
  return Number(statm.split(' ')[1]) * pageSize;
}

/** The process's open descriptors and the inodes of its sockets. */
async function descriptors(pid: number): Promise<{ fds: number; sockets: Set<string> }> {
  const names = await readdir(`/proc/${pid}/fd`);
  const sockets = new Set<string>();
  await Promise.all(
    names.map(async (n) => {
      const target = await readlink(`/proc/${pid}/fd/${n}`).catch(() => '');
      const m = /^socket:\[(\d+)\]$/.exec(target);
      if (m) sockets.add(m[1]!);
    }),
  );
  return { fds: names.length, sockets };
}

/** Local TCP port → socket inode, for connections to Postgres's port (5432). */
async function pgSocketInodes(): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(file, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const local = parseInt(f[1]!.split(':')[1]!, 16);
      const remote = parseInt(f[2]!.split(':')[1]!, 16);
      if (remote === 5432) out.set(local, f[9]!);
    }
  }
  return out;
}

/** The judged series of `samples`: per process rss (outside the V8 heap for a Node process), heap, handles, fds, pg; and both lags. */
export function seriesOf(samples: Sample[]): Series[] {
  const out: Series[] = [];
  const names = [...new Set(samples.flatMap((s) => Object.keys(s.processes)))];
  for (const name of names) {
    // A Node process's RSS is judged outside V8's heap (see `offHeap`); the dev server's whole.
    const offHeap = samples.every((s) => !s.processes[name] || s.processes[name].offHeap !== undefined);
    for (const kind of ['rss', 'heap', 'handles', 'fds', 'pg'] as const satisfies readonly ResourceKind[]) {
      const field = kind === 'rss' && offHeap ? 'offHeap' : kind;
      const points = samples.flatMap((s) => {
        const v = s.processes[name]?.[field];
        return v === undefined ? [] : [{ t: s.t, v }];
      });
      // The dev server speaks no Postgres and serves no Node metrics: nothing to judge there.
      if (points.length && !(kind === 'pg' && points.every((p) => p.v === 0))) out.push({ name: `${name} ${field === 'offHeap' ? 'rss outside the V8 heap' : kind}`, kind, samples: points });
    }
  }
  out.push({ name: 'cursor lag', kind: 'lag', samples: samples.map((s) => ({ t: s.t, v: s.cursorLag })) });
  out.push({ name: 'live-tail lag', kind: 'lag', samples: samples.map((s) => ({ t: s.t, v: s.tailLag })) });
  return out;
}

/** RSS outside V8's heap, when the process serves the heap's resident size. */
function offHeapOf(rss: number, metricsText: string): { offHeap?: number } {
  const resident = metric(metricsText, 'keelson_heap_resident_bytes', 'sum');
  return resident ? { offHeap: rss - resident } : {};
}

/** Prometheus text → the sum of a metric's series, and the maximum of another's. */
function metric(text: string, name: string, how: 'sum' | 'max'): number | undefined {
  let acc: number | undefined;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    const v = Number(line.slice(line.lastIndexOf(' ') + 1));
    acc = acc === undefined ? v : how === 'sum' ? acc + v : Math.max(acc, v);
  }
  return acc;
}

export interface Sampler {
  samples: Sample[];
  /** Takes one sample now. */
  sample(): Promise<Sample>;
  /** The judged series (`seriesOf`). */
  series(): Series[];
  close(): Promise<void>;
}

export async function startSampler(opts: { databaseUrl: string; databaseName: string; token: string; metricsUrls: Record<string, string>; processes: () => Promise<Watched>; t0: number }): Promise<Sampler> {
  const pg = new PgClient({ connectionString: opts.databaseUrl });
  await pg.connect();
  const samples: Sample[] = [];
  const last = new Map<number, { ticks: number; at: number }>();
  const scrape = async (url: string) => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${opts.token}` }, signal: AbortSignal.timeout(5_000) });
    if (!res.ok) throw new Error(`GET ${url} answered ${res.status}`);
    return res.text();
  };
  return {
    samples,
    async sample() {
      const watched = await opts.processes();
      const [activity, inodes, cursor, metrics] = await Promise.all([
        pg.query<{ client_port: number }>('SELECT client_port FROM pg_stat_activity WHERE datname = $1 AND client_port IS NOT NULL AND pid <> pg_backend_pid()', [opts.databaseName]),
        pgSocketInodes(),
        pg.query<{ lag: string | null }>('SELECT max(s.last_seq - c.position) AS lag FROM event_consumer_cursors c JOIN event_streams s ON s.stream = c.stream'),
        Promise.all(Object.entries(opts.metricsUrls).map(async ([name, url]) => [name, await scrape(url)] as const)),
      ]);
      const pgInodes = activity.rows.map((r) => inodes.get(r.client_port)).filter((i): i is string => !!i);
      const text = new Map(metrics);
      const processes: Record<string, ProcessSample> = {};
      const now = performance.now();
      for (const { name, pid } of watched) {
        const [ticks, rss, fd] = await Promise.all([cpuTicks(pid), rssBytes(pid), descriptors(pid)]);
        const before = last.get(pid);
        last.set(pid, { ticks, at: now });
        const m = text.get(name);
        processes[name] = {
          cpu: before ? ((ticks - before.ticks) / ticksPerSecond / ((now - before.at) / 1000)) * 100 : 0,
          rss,
          fds: fd.fds,
          pg: pgInodes.filter((i) => fd.sockets.has(i)).length,
          ...(m ? { heap: metric(m, 'keelson_heap_live_bytes', 'sum') || undefined, handles: metric(m, 'nodejs_active_handles', 'sum'), ...offHeapOf(rss, m) } : {}),
        };
      }
      const sample: Sample = {
        t: (Date.now() - opts.t0) / 1000,
        processes,
        cursorLag: Number(cursor.rows[0]?.lag ?? 0),
        tailLag: Math.max(0, ...metrics.map(([, m]) => metric(m, 'keelson_event_log_lag_events', 'max') ?? 0)),
      };
      samples.push(sample);
      return sample;
    },
    series: () => seriesOf(samples),
    close: () => pg.end(),
  };
}
