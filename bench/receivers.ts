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
      connectionParams: Record<string, string>;
      query: string;
      variables: Record<string, unknown>;
      /** Subscribers, one socket each. */
      count: number;
      /** Sockets opened at once. */
      parallel: number;
      /** The fields of an event whose values, joined by `:`, name it in `delivered` (e.g. `['cursor']`). */
      keyFields: string[];
    }
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

/**
 * Starts the receivers in a worker thread, so that receiving (sockets, JSON, timing) never runs on
 * an event loop being measured. A subscriber error fails every pending delivery; the worker
 * exiting fails everything.
 */
export function startReceivers(teardown: Teardown, timeoutMs = 30_000): Receivers {
  // The worker inherits `-r scripts/register.js` from execArgv, so it can be TypeScript.
  const worker = new Worker(join(__dirname, 'receivers.worker.ts'));
  const jobs = new Map<number, { resolve: (reply: ReceiversReply) => void; reject: (err: Error) => void }>();
  const waiting = new Map<string, { resolve: (d: Delivery) => void; reject: (err: Error) => void }>();
  /** Deliveries nobody waited for yet (an event may beat the answer of the request that caused it). */
  const early = new Map<string, Delivery>();
  let nextId = 1;
  const failAll = (err: Error) => {
    for (const w of [...jobs.values(), ...waiting.values()]) w.reject(err);
    jobs.clear();
    waiting.clear();
  };
  worker.on('message', (reply: ReceiversReply) => {
    if (reply.kind === 'delivered') {
      const waiter = waiting.get(reply.key);
      waiting.delete(reply.key);
      if (waiter) waiter.resolve(reply);
      else early.set(reply.key, reply);
      return;
    }
    if (reply.kind === 'error' && reply.id === undefined) {
      // A subscriber failed: whatever waits for an event fails; jobs (closing them) still run.
      for (const w of waiting.values()) w.reject(new Error(reply.message));
      waiting.clear();
      return;
    }
    const job = jobs.get(reply.id!);
    jobs.delete(reply.id!);
    if (reply.kind === 'error') job?.reject(new Error(reply.message));
    else job?.resolve(reply);
  });
  worker.on('error', failAll);
  worker.on('exit', (code) => failAll(new Error(`receivers worker exited (code ${code})`)));
  teardown.push('stop the receivers worker', () => worker.terminate().then(() => undefined));
  return {
    run(job) {
      return new Promise((resolve, reject) => {
        const id = nextId++;
        jobs.set(id, { resolve, reject });
        worker.postMessage({ ...job, id });
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
