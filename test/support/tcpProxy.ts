import { createServer, connect, type Server, type Socket } from 'node:net';

/** One connection a {@link TcpProxy} accepted. */
export interface ProxiedConnection {
  /** The index of the target it was forwarded to; null while connecting, or when no target took it. */
  target: number | null;
  /** The first line the client sent (at most 200 characters): tells an HTTP request from a WebSocket upgrade. */
  head: string;
  open: boolean;
}

/**
 * A loopback TCP proxy the test owns, in front of one or more targets: each new connection goes to
 * the next target in turn (round robin); a target that refuses the connection is skipped for the
 * next one, as a load balancer skips a dead backend.
 */
export interface TcpProxy {
  port: number;
  /** Every connection accepted so far, in arrival order. */
  readonly connections: readonly ProxiedConnection[];
  /** New connections go to the first `count` targets only (existing ones stay where they are); no argument: all. */
  limit(count?: number): void;
  /** Ends the open connections to target `index` (every open one without it), both sides at once; returns how many. */
  drop(index?: number): number;
  /** Stop forwarding (new connections are accepted and left waiting), as a hung host. */
  hang(): void;
  /** Forward again, including what was held. */
  resume(): void;
  close(): Promise<void>;
}

const firstLine = (chunk: Buffer) => chunk.subarray(0, 200).toString('latin1').split('\r\n', 1)[0]!;

export async function startTcpProxy(targets: number | readonly number[], targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const ports = typeof targets === 'number' ? [targets] : [...targets];
  if (!ports.length) throw new Error('a TCP proxy needs at least one target');
  let hung = false;
  let active = ports.length;
  let turn = 0;
  const connections: ProxiedConnection[] = [];
  /** The sockets of every connection not yet ended (the upstream once one is being connected). */
  const sockets = new Map<ProxiedConnection, { client: Socket; upstream?: Socket }>();

  const end = (conn: ProxiedConnection) => {
    const pair = sockets.get(conn);
    if (!pair) return;
    sockets.delete(conn);
    conn.open = false;
    pair.client.destroy();
    pair.upstream?.destroy();
  };

  /** Connects `conn` to the next target in turn; on a refusal, to the one after, until every active target was tried. */
  const forward = (conn: ProxiedConnection, client: Socket, tries: number) => {
    if (!sockets.has(conn)) return;
    if (tries >= active) return end(conn);
    const index = turn++ % active;
    const upstream = connect(ports[index]!, targetHost);
    sockets.set(conn, { client, upstream });
    upstream.once('error', () => {
      if (conn.target === null) {
        upstream.destroy();
        forward(conn, client, tries + 1);
      }
    });
    upstream.once('connect', () => {
      conn.target = index;
      upstream.on('error', () => end(conn)).on('close', () => end(conn));
      client.once('data', (chunk: Buffer) => (conn.head = firstLine(chunk)));
      client.pipe(upstream);
      upstream.pipe(client);
      if (hung) for (const s of [client, upstream]) s.pause();
    });
  };

  const server: Server = createServer((client) => {
    const conn: ProxiedConnection = { target: null, head: '', open: true };
    connections.push(conn);
    sockets.set(conn, { client });
    client.on('error', () => end(conn)).on('close', () => end(conn));
    forward(conn, client, 0);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  /** Both sockets of every forwarding connection (one still connecting is paused or not once it connects). */
  const each = (fn: (s: Socket) => void) => {
    for (const [conn, { client, upstream }] of sockets) if (conn.target !== null && upstream) for (const s of [client, upstream]) fn(s);
  };
  return {
    port: typeof address === 'object' && address ? address.port : 0,
    connections,
    limit(count = ports.length) {
      if (count < 1 || count > ports.length) throw new Error(`limit ${count}: this proxy has ${ports.length} targets`);
      active = count;
    },
    drop(index) {
      const doomed = [...sockets.keys()].filter((conn) => index === undefined || conn.target === index);
      for (const conn of doomed) end(conn);
      return doomed.length;
    },
    hang() {
      hung = true;
      each((s) => s.pause());
    },
    resume() {
      hung = false;
      each((s) => s.resume());
    },
    async close() {
      for (const conn of [...sockets.keys()]) end(conn);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
