// The load generator, run in a worker thread by loadClient.ts: plain node:http with keep-alive, one
// fresh agent per job so no connection idles across jobs (a server closing an idle keep-alive socket
// while we reuse it would fail a request for reasons that are not the server's).
import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import type { LoadJob, LoadReply } from './loadClient';

function post(agent: Agent, url: URL, body: Buffer, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        // A JSON content type also satisfies Apollo's CSRF prevention, as a browser client's would.
        headers: { 'content-type': 'application/json', 'content-length': body.length, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200 || text.includes('"errors"')) {
            reject(new Error(`${url.href} answered ${res.statusCode}: ${text.slice(0, 300)}`));
          } else {
            resolve();
          }
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function latency(agent: Agent, url: URL, body: Buffer, headers: Record<string, string>, count: number): Promise<number[]> {
  const samplesMs: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    await post(agent, url, body, headers);
    samplesMs.push(performance.now() - t0);
  }
  return samplesMs;
}

async function throughput(agent: Agent, url: URL, body: Buffer, headers: Record<string, string>, concurrency: number, durationMs: number) {
  const start = performance.now();
  const deadline = start + durationMs;
  let completed = 0;
  let last = start;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        await post(agent, url, body, headers);
        completed += 1;
        last = performance.now();
      }
    }),
  );
  // Measured to the last answer, so requests still in flight at the deadline count at their own time.
  return { completed, elapsedMs: last - start };
}

/** `throughput` with a body picked at random per request, timing each request. */
async function mixed(agent: Agent, url: URL, bodies: Buffer[], headers: Record<string, string>, concurrency: number, durationMs: number) {
  const start = performance.now();
  const deadline = start + durationMs;
  const samplesMs: number[] = [];
  let last = start;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        await post(agent, url, bodies[Math.floor(Math.random() * bodies.length)]!, headers);
        last = performance.now();
        samplesMs.push(last - t0);
      }
    }),
  );
  return { completed: samplesMs.length, elapsedMs: last - start, samplesMs };
}

async function handle(job: LoadJob): Promise<LoadReply> {
  const url = new URL(job.url);
  const agent = new Agent({ keepAlive: true, maxSockets: job.kind === 'latency' ? 1 : job.concurrency });
  try {
    if (job.kind === 'mixed') {
      const bodies = job.bodies.map((b) => Buffer.from(b));
      return { id: job.id, kind: 'mixed', ...(await mixed(agent, url, bodies, job.headers, job.concurrency, job.durationMs)) };
    }
    const body = Buffer.from(JSON.stringify({ query: job.query }));
    if (job.kind === 'latency') return { id: job.id, kind: 'latency', samplesMs: await latency(agent, url, body, job.headers, job.count) };
    return { id: job.id, kind: 'throughput', ...(await throughput(agent, url, body, job.headers, job.concurrency, job.durationMs)) };
  } finally {
    agent.destroy();
  }
}

parentPort?.on('message', (job: LoadJob) => {
  handle(job).then(
    (reply) => parentPort?.postMessage(reply),
    (err: unknown) => parentPort?.postMessage({ id: job.id, kind: 'error', message: (err as Error).message ?? String(err) } satisfies LoadReply),
  );
});
