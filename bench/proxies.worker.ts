// The round-robin TCP proxies of `npm run bench:replicas`, run in a worker thread by replicas.ts so
// that forwarding bytes never runs on the event loop of the subgraphs the bench measures.
import { parentPort } from 'node:worker_threads';
import { startTcpProxy, type TcpProxy } from '../test/support/tcpProxy';

/** One request to the worker; every one is answered with the same id. */
export type ProxyRequest =
  | { id: number; op: 'start'; targets: number[] }
  | { id: number; op: 'limit'; proxy: number; count: number }
  | { id: number; op: 'drop'; proxy: number }
  | { id: number; op: 'routed'; proxy: number }
  | { id: number; op: 'close' };

export type ProxyReply = { id: number; ok: true; value: number | number[] } | { id: number; ok: false; message: string };

const proxies: TcpProxy[] = [];

async function handle(req: ProxyRequest): Promise<number | number[]> {
  switch (req.op) {
    case 'start': {
      const proxy = await startTcpProxy(req.targets);
      proxies.push(proxy);
      return [proxies.length - 1, proxy.port];
    }
    case 'limit':
      proxies[req.proxy]!.limit(req.count);
      return req.count;
    case 'drop':
      return proxies[req.proxy]!.drop();
    case 'routed': {
      // Connections accepted so far, per target.
      const counts: number[] = [];
      for (const c of proxies[req.proxy]!.connections) if (c.target !== null) counts[c.target] = (counts[c.target] ?? 0) + 1;
      return Array.from(counts, (n) => n ?? 0);
    }
    case 'close':
      await Promise.all(proxies.splice(0).map((p) => p.close()));
      return 0;
  }
}

parentPort!.on('message', (req: ProxyRequest) => {
  handle(req).then(
    (value) => parentPort!.postMessage({ id: req.id, ok: true, value } satisfies ProxyReply),
    (err: unknown) => parentPort!.postMessage({ id: req.id, ok: false, message: (err as Error).message ?? String(err) } satisfies ProxyReply),
  );
});
