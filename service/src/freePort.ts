import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * The ports the kernel hands out for `listen(0)` and for outgoing connections
 * (`net.ipv4.ip_local_port_range`; Linux's default when it cannot be read).
 */
function ephemeralRange(): [number, number] {
  try {
    const [lo, hi] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi) && lo > 0 && hi >= lo) return [lo, hi];
  } catch {
    // not Linux, or /proc not mounted
  }
  return [32768, 60999];
}

/** The range a port is picked from: the 12,000 ports just below the ephemeral range, never under 10000. */
export function pickRange(ephemeral: [number, number] = ephemeralRange()): [number, number] {
  const hi = ephemeral[0] - 1;
  const lo = Math.max(10_000, hi - 12_000);
  return hi > lo ? [lo, hi] : [ephemeral[1] + 1, Math.min(65_535, ephemeral[1] + 4_000)];
}

/** Whether a server could listen on `host:port` right now. */
export function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Every port `freePort` returned in this process: two callers asking before either binds never get the same one. */
const handedOut = new Set<number>();

/**
 * A TCP port nothing listens on right now, for a server the caller is about to start on it.
 *
 * Picked at random from below the kernel's ephemeral range, so that a server another process binds to
 * port 0 — or an outgoing connection — cannot take it between this check and the caller's bind (the
 * race a `listen(0)` probe has: the kernel hands that same port to the next `listen(0)` anywhere).
 * Still racy against another picker choosing the same port in that instant (one in thousands).
 */
export async function freePort(host = '127.0.0.1', range: [number, number] = pickRange()): Promise<number> {
  const [lo, hi] = range;
  for (let attempt = 0; attempt < 64; attempt += 1) {
    const port = lo + Math.floor(Math.random() * (hi - lo + 1));
    // A port this process handed out is its caller's until it binds, even while nothing listens yet.
    if (handedOut.has(port)) continue;
    if (await portIsFree(port, host)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port on ${host} between ${lo} and ${hi} after 64 tries`);
}
