import { fork } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { Teardown } from './benchStack';

/** Wall-clock milliseconds with sub-millisecond resolution, comparable between threads. */
export const now = (): number => performance.timeOrigin + performance.now();

/** What the main thread asks the receivers' worker (receivers.worker.ts). */
export type ReceiversJob =
  | {
      id: number;
      kind: 'open';
      url: string;
      /** One for every socket, or one per socket in turn (socket i takes `[i % length]`: one credential per so many sockets). */
      connectionParams: Record<string, string> | Record<string, string>[];
      query: string;
      variables: Record<string, unknown>;
      /** Subscribers, one socket each. */
      count: number;
      /** Sockets opened at once. */
      parallel: number;
      /** The fields of an event whose values, joined by `:`, name it in `delivered` (e.g. `['cursor']`). */
      keyFields: string[];
    }
  /** Plain WebSocket clients (no GraphQL): every text message is `{"key": …}` and arrives as the event named `key`. */
  | { id: number; kind: 'openRaw'; url: string; count: number; parallel: number }
  | { id: number; kind: 'close' }
  | { id: number; kind: 'echo'; url: string; count: number }
  /** Receive NOTIFYs on `channel` (one LISTEN connection, kept until the worker stops). */
  | { id: number; kind: 'listen'; databaseUrl: string; channel: string }
  /** Stop counting them. */
  | { id: number; kind: 'unlisten' };

/** The worker's answers; `delivered` comes unasked, once every open receiver got the event named `key`. */
export type ReceiversReply =
  | { kind: 'done'; id: number }
  | { kind: 'echo'; id: number; samplesMs: number[] }
  | { kind: 'delivered'; key: string; first: number; last: number; event: Record<string, unknown> }
  | { kind: 'error'; id?: number; message: string };

/** A delivery: when the first and the last receiver got the event (`now()` times), and the event. */
export interface Delivery {
  first: number;
  last: number;
  event: Record<string, unknown>;
}

type Unnumbered<J> = J extends unknown ? Omit<J, 'id'> : never;

export interface Receivers {
  /** Runs one job on the worker (opening subscribers resolves once every socket is acknowledged). */
  run(job: Unnumbered<ReceiversJob>): Promise<ReceiversReply>;
  /** Resolves when every open receiver got the event named `key`, also if that happened before the call. */
  delivered(key: string): Promise<Delivery>;
}

/** Where receivers.worker.ts runs: a worker thread or a child process, as the core below sees it. */
interface ReceiverEndpoint {
  send(job: ReceiversJob): void;
  /** Registers the handlers for its replies and for its unexpected end. */
  listen(onReply: (reply: ReceiversReply) => void, onEnd: (err: Error) => void): void;
}

/**
 * Starts the receivers in a worker thread, so that receiving (sockets, JSON, timing) never runs on
 * an event loop being measured. A subscriber error fails every pending delivery; the worker
 * exiting fails everything.
 */
export function startReceivers(teardown: Teardown, timeoutMs = 30_000): Receivers {
  // The worker inherits `-r scripts/register.js` from execArgv, so it can be TypeScript.
  const worker = new Worker(join(__dirname, 'receivers.worker.ts'));
  teardown.push('stop the receivers worker', () => worker.terminate().then(() => undefined));
  return receiversOn(
    [
      {
        send: (job) => worker.postMessage(job),
        listen(onReply, onEnd) {
          worker.on('message', onReply);
          worker.on('error', onEnd);
          worker.on('exit', (code) => onEnd(new Error(`receivers worker exited (code ${code})`)));
        },
      },
    ],
    timeoutMs,
  );
}

/**
 * The receivers in `processes` child processes of their own (the same receivers.worker.ts), for
 * fan-outs of thousands of sockets: their sockets, frames and JSON then run on neither the bench's
 * event loop nor its file descriptors. An `open` job's subscribers (and its `connectionParams`, when
 * a list) are split evenly between the processes; an event is delivered once every process got it to
 * all of its subscribers, first and last taken over all of them.
 */
export function startReceiverProcesses(teardown: Teardown, processes: number, timeoutMs = 60_000): Receivers & { pids: number[] } {
  const children = Array.from({ length: processes }, () => fork(join(__dirname, 'receivers.worker.ts'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  let stopping = false;
  teardown.push('stop the receivers processes', async () => {
    stopping = true;
    await Promise.all(
      children.map((child) => {
        if (child.exitCode !== null || child.signalCode !== null) return undefined;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.disconnect();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        return exited.finally(() => clearTimeout(timer));
      }),
    );
  });
  const receivers = receiversOn(
    children.map((child) => ({
      send: (job) => void child.send(job),
      listen(onReply, onEnd) {
        child.on('message', onReply);
        child.on('exit', (code, signal) => {
          if (!stopping) onEnd(new Error(`a receivers process exited (code ${code}, signal ${signal})`));
        });
      },
    })),
    timeoutMs,
  );
  return { ...receivers, pids: children.map((child) => child.pid!) };
}

/**
 * The bookkeeping of receivers spread over `endpoints`: a job goes to each (an `open` job's
 * subscribers split between them) and is done when all of them answered; an event is delivered
 * once every endpoint got it to all of its subscribers, first and last taken over all of them.
 */
function receiversOn(endpoints: ReceiverEndpoint[], timeoutMs: number): Receivers {
  const parts = endpoints.length;
  const jobs = new Map<number, { pending: number; resolve: (reply: ReceiversReply) => void; reject: (err: Error) => void }>();
  const arrivals = new Map<string, Delivery & { count: number }>();
  const waiting = new Map<string, { resolve: (d: Delivery) => void; reject: (err: Error) => void }>();
  /** Deliveries nobody waited for yet (an event may beat the answer of the request that caused it). */
  const early = new Map<string, Delivery>();
  let nextId = 1;
  const failAll = (err: Error) => {
    for (const w of [...jobs.values(), ...waiting.values()]) w.reject(err);
    jobs.clear();
    waiting.clear();
  };
  const onReply = (reply: ReceiversReply) => {
    if (reply.kind === 'delivered') {
      const a = arrivals.get(reply.key);
      const merged = a ? { ...a, count: a.count + 1, first: Math.min(a.first, reply.first), last: Math.max(a.last, reply.last) } : { ...reply, count: 1 };
      if (merged.count < parts) return void arrivals.set(reply.key, merged);
      arrivals.delete(reply.key);
      const delivery = { first: merged.first, last: merged.last, event: merged.event };
      const waiter = waiting.get(reply.key);
      waiting.delete(reply.key);
      if (waiter) waiter.resolve(delivery);
      else early.set(reply.key, delivery);
      return;
    }
    if (reply.kind === 'error' && reply.id === undefined) {
      // A subscriber failed: whatever waits for an event fails; jobs (closing them) still run.
      for (const w of waiting.values()) w.reject(new Error(reply.message));
      waiting.clear();
      return;
    }
    const job = jobs.get(reply.id!);
    if (!job) return;
    if (reply.kind === 'error') {
      jobs.delete(reply.id!);
      return job.reject(new Error(reply.message));
    }
    if (--job.pending === 0) {
      jobs.delete(reply.id!);
      job.resolve(reply);
    }
  };
  for (const endpoint of endpoints) endpoint.listen(onReply, failAll);
  /** The share of `job` endpoint `i` runs. */
  const share = (job: Unnumbered<ReceiversJob>, i: number): Unnumbered<ReceiversJob> => {
    const split = (n: number) => [Math.floor((n * i) / parts), Math.floor((n * (i + 1)) / parts)] as const;
    if (job.kind === 'openRaw') {
      const [from, to] = split(job.count);
      return { ...job, count: to - from };
    }
    if (job.kind !== 'open') return job;
    const params = job.connectionParams;
    if (!Array.isArray(params) || params.length < parts) {
      const [from, to] = split(job.count);
      return { ...job, count: to - from };
    }
    // Credentials split between the endpoints, and the subscribers with them: each credential still holds as many sockets.
    const [first, end] = split(params.length);
    const at = (p: number) => Math.floor((job.count * p) / params.length);
    return { ...job, count: at(end) - at(first), connectionParams: params.slice(first, end) };
  };
  return {
    run(job) {
      if ((job.kind === 'open' || job.kind === 'openRaw') && job.count < parts) throw new Error(`${job.kind}: ${job.count} subscribers cannot be split over ${parts} processes`);
      return new Promise((resolve, reject) => {
        const id = nextId++;
        jobs.set(id, { pending: parts, resolve, reject });
        endpoints.forEach((endpoint, i) => endpoint.send({ ...share(job, i), id } as ReceiversJob));
      });
    },
    delivered(key) {
      const done = early.get(key);
      if (done) {
        early.delete(key);
        return Promise.resolve(done);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(key);
          reject(new Error(`${key} was not delivered to every receiver within ${timeoutMs} ms`));
        }, timeoutMs);
        waiting.set(key, {
          resolve: (d) => (clearTimeout(timer), resolve(d)),
          reject: (err) => (clearTimeout(timer), reject(err)),
        });
      });
    },
  };
}
