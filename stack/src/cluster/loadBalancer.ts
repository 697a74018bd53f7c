import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from '@keelson/service';
import { startClusterProcess, type ClusterProcess } from './clusterProcess';

/** A balanced service: its slots' ports behind one front port, the first `serving` of them in rotation. */
export interface BalancedPool {
  name: string;
  front: number;
  replicas: number[];
  /** Slots in rotation from the start; the others are spares, in maintenance until `ready`. @default all */
  serving?: number;
}

export interface LoadBalancer {
  /** Where each pool is served: `http://127.0.0.1:<front>`. */
  urls: Record<string, string>;
  /** HAProxy's runtime API socket (`haproxyCommand`). */
  socket: string;
  process(): ClusterProcess;
  /**
   * Takes `pool`'s replica `index` (0-based) out of rotation and waits until it holds no request, or
   * `timeoutMs` (a client's keep-alive connection or WebSocket can stay attached: the replica's own
   * graceful stop lets its in-flight requests finish, and WebSocket clients resume from their cursors).
   */
  drain(pool: string, index: number, timeoutMs?: number): Promise<void>;
  /** Puts it in rotation and waits until its health check has it UP. */
  ready(pool: string, index: number, timeoutMs?: number): Promise<void>;
  /** Takes it out of rotation at once (a spare slot again). */
  maintain(pool: string, index: number): Promise<void>;
  stop(): Promise<void>;
}

/** The HAProxy binary from Debian's package, or a message saying how to install it. */
export function haproxyBinary(): string {
  for (const path of ['/usr/sbin/haproxy', '/usr/bin/haproxy', '/usr/local/sbin/haproxy']) if (existsSync(path)) return path;
  throw new Error('HAProxy is not installed: apt-get install -y haproxy (the cluster shape balances its replicas with it)');
}

/**
 * HAProxy's config: per pool a frontend on loopback and a round-robin backend whose servers are
 * checked on `GET /health` every 500 ms (with a loopback Host: services answer only names they know); WebSocket upgrades pass through (`timeout tunnel`); a
 * request whose connection fails is sent to the other replica.
 */
export function haproxyConfig(pools: readonly BalancedPool[], socket: string): string {
  const lines = [
    'global',
    `  stats socket ${socket} mode 600 level admin`,
    '  maxconn 4096',
    'defaults',
    '  mode http',
    '  timeout connect 2s',
    '  timeout client 120s',
    '  timeout server 120s',
    '  timeout tunnel 1h',
    '  timeout client-fin 5s',
    '  option redispatch 1',
    '  retries 3',
    '  retry-on conn-failure',
  ];
  for (const pool of pools) {
    lines.push(`frontend ${pool.name}`, `  bind 127.0.0.1:${pool.front}`, `  default_backend ${pool.name}`);
    lines.push(`backend ${pool.name}`, '  balance roundrobin', '  option httpchk', '  http-check send meth GET uri /health ver HTTP/1.1 hdr Host 127.0.0.1', '  http-check expect status 200', '  default-server inter 500ms fall 2 rise 1');
    pool.replicas.forEach((port, i) => lines.push(`  server ${pool.name}-${i + 1} 127.0.0.1:${port} check${i >= (pool.serving ?? pool.replicas.length) ? ' disabled' : ''}`));
  }
  return `${lines.join('\n')}\n`;
}

/** One command on HAProxy's runtime API socket; resolves with its answer. */
export function haproxyCommand(socket: string, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = connect(socket);
    let answer = '';
    conn.on('data', (c) => (answer += c.toString()));
    conn.on('end', () => resolve(answer));
    conn.on('error', reject);
    conn.end(`${command}\n`);
  });
}

/** A column of `show stat` for `backend/server`: `scur` (requests and connections it holds now), `status` (UP, DOWN, MAINT, DRAIN…). */
async function serverStat(socket: string, backend: string, server: string, column: 'scur' | 'status'): Promise<string | undefined> {
  const csv = await haproxyCommand(socket, 'show stat');
  const [header, ...rows] = csv.replace(/^# /, '').trim().split('\n');
  const cols = header!.split(',');
  const row = rows.map((r) => r.split(',')).find((r) => r[cols.indexOf('pxname')] === backend && r[cols.indexOf('svname')] === server);
  return row?.[cols.indexOf(column)];
}

/** HAProxy in front of `pools`, on their front ports (free loopback ports picked here where none is given). */
export async function startLoadBalancer(dir: string, pools: readonly (Omit<BalancedPool, 'front'> & { front?: number })[]): Promise<LoadBalancer> {
  const withFronts: BalancedPool[] = [];
  for (const pool of pools) withFronts.push({ ...pool, front: pool.front || (await freePort()) });
  const socket = join(dir, 'haproxy.sock');
  const configFile = join(dir, 'haproxy.cfg');
  await writeFile(configFile, haproxyConfig(withFronts, socket));
  const proc = await startClusterProcess({
    name: 'haproxy',
    command: haproxyBinary(),
    args: ['-db', '-f', configFile],
    cwd: dir,
    env: process.env,
    logFile: join(dir, 'haproxy.log'),
    ready: () => haproxyCommand(socket, 'show info').then((a) => a.includes('Name: HAProxy')),
  });
  const serverOf = (pool: string, index: number) => `${pool}/${pool}-${index + 1}`;
  return {
    urls: Object.fromEntries(withFronts.map((p) => [p.name, `http://127.0.0.1:${p.front}`])),
    socket,
    process: () => proc,
    async drain(pool, index, timeoutMs = 5_000) {
      await haproxyCommand(socket, `set server ${serverOf(pool, index)} state drain`);
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline && Number((await serverStat(socket, pool, `${pool}-${index + 1}`, 'scur')) ?? 0) > 0) await new Promise((r) => setTimeout(r, 100));
    },
    async ready(pool, index, timeoutMs = 30_000) {
      await haproxyCommand(socket, `set server ${serverOf(pool, index)} state ready`);
      const deadline = Date.now() + timeoutMs;
      while (!(await serverStat(socket, pool, `${pool}-${index + 1}`, 'status'))?.startsWith('UP')) {
        if (Date.now() > deadline) throw new Error(`HAProxy does not see ${serverOf(pool, index)} UP after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async maintain(pool, index) {
      await haproxyCommand(socket, `set server ${serverOf(pool, index)} state maint`);
    },
    stop: () => proc.stop(),
  };
}
