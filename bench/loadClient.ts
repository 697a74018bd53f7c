import { join } from 'node:path';
import { Worker } from 'node:worker_threads';

/** One job for the load worker: sequential timed requests, or a closed loop at a fixed concurrency. */
export type LoadJob =
  | { id: number; kind: 'latency'; url: string; headers: Record<string, string>; query: string; count: number }
  | { id: number; kind: 'throughput'; url: string; headers: Record<string, string>; query: string; concurrency: number; durationMs: number }
  | { id: number; kind: 'mixed'; url: string; headers: Record<string, string>; bodies: string[]; concurrency: number; durationMs: number };

/** The worker's answer to the job with the same id. */
export type LoadReply =
  | { id: number; kind: 'latency'; samplesMs: number[] }
  | { id: number; kind: 'throughput'; completed: number; elapsedMs: number }
  | { id: number; kind: 'mixed'; completed: number; elapsedMs: number; samplesMs: number[] }
  | { id: number; kind: 'error'; message: string };

/** A job before it is numbered (Omit distributed over the union, so each kind keeps its fields). */
type Unnumbered<J> = J extends unknown ? Omit<J, 'id'> : never;
type JobBody = Unnumbered<LoadJob>;

export interface Throughput {
  completed: number;
  elapsedMs: number;
}

export interface LoadClient {
  /** `count` requests one after another; the wall time of each, in ms. */
  latency(url: string, query: string, count: number, headers?: Record<string, string>): Promise<number[]>;
  /** `concurrency` clients each sending their next request as soon as the last answered, for `durationMs`. */
  throughput(url: string, query: string, concurrency: number, durationMs: number, headers?: Record<string, string>): Promise<Throughput>;
  /**
   * A closed loop like `throughput`, each request's body picked at random from `bodies` (JSON
   * `{ query, variables }`; one body: identical requests), with every request's wall time.
   */
  mixed(url: string, bodies: string[], concurrency: number, durationMs: number, headers?: Record<string, string>): Promise<Throughput & { samplesMs: number[] }>;
  /** Terminates the worker. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts the HTTP load generator in a worker thread, so its own CPU (serializing, parsing, timing)
 * never runs on the event loop that serves the gateway and the subgraph being measured.
 * Any non-200 answer or GraphQL error fails the job.
 */
export function startLoadClient(): LoadClient {
  // The worker inherits `-r scripts/register.js` from execArgv, so it can be TypeScript.
  const worker = new Worker(join(__dirname, 'load.worker.ts'));
  const pending = new Map<number, { resolve: (reply: LoadReply) => void; reject: (err: Error) => void }>();
  let nextId = 1;
  let closed: Promise<void> | undefined;

  const failAll = (err: Error) => {
    for (const { reject } of pending.values()) reject(err);
    pending.clear();
  };
  worker.on('message', (reply: LoadReply) => {
    const waiter = pending.get(reply.id);
    pending.delete(reply.id);
    if (!waiter) return;
    if (reply.kind === 'error') waiter.reject(new Error(reply.message));
    else waiter.resolve(reply);
  });
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`load worker exited (code ${code})`)));

  const run = (job: JobBody): Promise<LoadReply> =>
    new Promise((resolve, reject) => {
      if (closed) return reject(new Error('load client is closed'));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      worker.postMessage({ ...job, id } as LoadJob);
    });

  return {
    async latency(url, query, count, headers = {}) {
      const reply = await run({ kind: 'latency', url, headers, query, count });
      if (reply.kind !== 'latency') throw new Error(`unexpected reply ${reply.kind}`);
      return reply.samplesMs;
    },
    async throughput(url, query, concurrency, durationMs, headers = {}) {
      const reply = await run({ kind: 'throughput', url, headers, query, concurrency, durationMs });
      if (reply.kind !== 'throughput') throw new Error(`unexpected reply ${reply.kind}`);
      return { completed: reply.completed, elapsedMs: reply.elapsedMs };
    },
    async mixed(url, bodies, concurrency, durationMs, headers = {}) {
      const reply = await run({ kind: 'mixed', url, headers, bodies, concurrency, durationMs });
      if (reply.kind !== 'mixed') throw new Error(`unexpected reply ${reply.kind}`);
      return { completed: reply.completed, elapsedMs: reply.elapsedMs, samplesMs: reply.samplesMs };
    },
    close() {
      closed ??= worker.terminate().then(() => undefined);
      return closed;
    },
  };
}
