import { createServer, connect, type Server, type Socket } from 'node:net';

/** A loopback TCP proxy the test owns: forwards to `target` until hung, then holds every byte. */
export interface TcpProxy {
  port: number;
  /** Stop forwarding (new connections are accepted and left waiting), as a hung host. */
  hang(): void;
  /** Forward again, including what was held. */
  resume(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  let hung = false;
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    if (hung) for (const s of pair) s.pause();
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    hang() {
      hung = true;
      for (const pair of pairs) for (const s of pair) s.pause();
    },
    resume() {
      hung = false;
      for (const pair of pairs) for (const s of pair) s.resume();
    },
    async close() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
