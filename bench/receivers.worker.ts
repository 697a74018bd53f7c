// The receiving side of the stream benches (`bench:streams`, `bench:temporal`), run in a worker thread
// or a child process (the fan-out's thousands of sockets) by receivers.ts: graphql-ws subscribers, a
// raw WebSocket echo client and a Postgres LISTEN connection. Every arrival is stamped with `now()`
// (timeOrigin + performance.now(), comparable across threads and processes); the main thread stamps
// its commits and requests the same way.
import { parentPort } from 'node:worker_threads';
import { createClient, type Client as WsClient } from 'graphql-ws';
import { Client as PgClient } from 'pg';
import WebSocket from 'ws';
import { now, type ReceiversJob, type ReceiversReply } from './receivers';

const post = (reply: ReceiversReply) => (parentPort ? parentPort.postMessage(reply) : process.send!(reply));
// As a child process, it ends with the channel to the process that started it.
if (!parentPort) process.once('disconnect', () => process.exit(0));

/** Open subscribers: one graphql-ws client (one socket) each. */
let clients: WsClient[] = [];
/** Open plain WebSocket receivers (`openRaw`). */
let rawSockets: WebSocket[] = [];
/** Per event key: how many subscribers got it, when the first and the last did, the first's event. */
const arrivals = new Map<string, { count: number; first: number; last: number; event: Record<string, unknown> }>();
let expected = 0;
let listener: PgClient | undefined;

function arrived(key: string, event: Record<string, unknown>): void {
  const at = now();
  const a = arrivals.get(key) ?? { count: 0, first: at, last: at, event };
  a.count += 1;
  a.last = at;
  arrivals.set(key, a);
  if (a.count === expected) {
    arrivals.delete(key);
    post({ kind: 'delivered', key, first: a.first, last: a.last, event: a.event });
  }
}

/** Runs `open` `count` times, `parallel` at a time. */
async function openEach(count: number, parallel: number, open: () => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, count) }, async () => {
      while (next < count) {
        next += 1;
        await open();
      }
    }),
  );
}

/** Opens `count` subscribers, `parallel` sockets at a time; resolves once every socket is acknowledged. */
async function open(job: Extract<ReceiversJob, { kind: 'open' }>): Promise<void> {
  expected = job.count;
  arrivals.clear();
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const client = createClient({
        url: job.url,
        webSocketImpl: WebSocket,
        connectionParams: Array.isArray(job.connectionParams) ? job.connectionParams[clients.length % job.connectionParams.length] : job.connectionParams,
        lazy: false,
        retryAttempts: 0,
        on: { connected: () => resolve(), closed: (e) => reject(new Error(`socket closed before ack: ${String((e as { code?: number }).code)} ${String((e as { reason?: string }).reason ?? '')}`.trim())) },
        onNonLazyError: reject,
      });
      clients.push(client);
      client.subscribe(
        { query: job.query, variables: job.variables },
        {
          next: (result) => {
            const data = result.data as Record<string, Record<string, unknown>> | null | undefined;
            const event = data ? Object.values(data)[0] : undefined;
            if (result.errors?.length || !event) post({ kind: 'error', message: `subscriber got ${JSON.stringify(result).slice(0, 300)}` });
            else arrived(job.keyFields.map((f) => String(event[f])).join(':'), event);
          },
          error: (err) => post({ kind: 'error', message: `subscription failed: ${JSON.stringify(err).slice(0, 300)}` }),
          complete: () => undefined,
        },
      );
    });
  await openEach(job.count, job.parallel, one);
}

/** Opens `count` plain WebSocket receivers, `parallel` at a time; every text message `{"key": …}` arrives as the event `key`. */
async function openRaw(job: Extract<ReceiversJob, { kind: 'openRaw' }>): Promise<void> {
  expected = job.count;
  arrivals.clear();
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const socket = new WebSocket(job.url, { perMessageDeflate: false });
      rawSockets.push(socket);
      socket.once('open', () => resolve()).once('error', reject);
      socket.on('message', (data) => arrived((JSON.parse(data.toString()) as { key: string }).key, {}));
    });
  await openEach(job.count, job.parallel, one);
}

async function close(): Promise<void> {
  const closing = clients;
  const closingRaw = rawSockets;
  clients = [];
  rawSockets = [];
  expected = 0;
  await Promise.all([
    ...closing.map((c) => c.dispose()),
    ...closingRaw.map((socket) => new Promise<void>((resolve) => (socket.readyState === WebSocket.CLOSED ? resolve() : (socket.once('close', () => resolve()), socket.close())))),
  ]);
}

/** `count` round trips of a small frame to an echo server, one after another; each in ms. */
async function echo(url: string, count: number): Promise<number[]> {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  const samples: number[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const t0 = now();
      await new Promise<void>((resolve) => {
        socket.once('message', () => resolve());
        socket.send(JSON.stringify({ id: String(i), type: 'next', payload: { data: { event: { cursor: String(i) } } } }));
      });
      samples.push(now() - t0);
    }
  } finally {
    socket.close();
  }
  return samples;
}

const onJob = (job: ReceiversJob) => {
  void (async () => {
    try {
      switch (job.kind) {
        case 'open':
          await open(job);
          return post({ kind: 'done', id: job.id });
        case 'openRaw':
          await openRaw(job);
          return post({ kind: 'done', id: job.id });
        case 'close':
          await close();
          return post({ kind: 'done', id: job.id });
        case 'echo':
          return post({ kind: 'echo', id: job.id, samplesMs: await echo(job.url, job.count) });
        case 'listen': {
          // LISTEN on a channel of the bench's own: a NOTIFY round trip, the hop every event takes.
          // One connection for the whole run (the shared Postgres has few to spare).
          if (!listener) {
            listener = new PgClient({ connectionString: job.databaseUrl });
            await listener.connect();
            listener.on('notification', (msg) => arrived(msg.payload ?? '', {}));
            await listener.query(`LISTEN ${job.channel}`);
          }
          expected = 1;
          return post({ kind: 'done', id: job.id });
        }
        case 'unlisten':
          expected = 0;
          return post({ kind: 'done', id: job.id });
      }
    } catch (err) {
      post({ kind: 'error', id: job.id, message: (err as Error).message });
    }
  })();
};
if (parentPort) parentPort.on('message', onJob);
else process.on('message', onJob);
