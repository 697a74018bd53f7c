import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { startStandin, type RunningStandin, type StandinServerOptions } from '@keelson/clickclack-standin';

/** Raw HTTP against a server, as any client would speak it. */
export async function call(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: Record<string, unknown> & { error?: string }; headers: Headers }> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(`${base}${path}`, { method, headers, body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body) });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {}, headers: res.headers };
}

/** A GET with a `Host` header of the caller's choosing (fetch may not set one). */
export function getWithHost(base: string, path: string, host: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'GET', headers: { host } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** An in-process stand-in on a free loopback port over a temp data directory. */
export async function standin(opts: Partial<StandinServerOptions> = {}): Promise<RunningStandin & { dataDir: string; cleanup(): Promise<void> }> {
  const dir = opts.dataDir ? undefined : mkdtempSync(join(tmpdir(), 'keelson-standin-'));
  const dataDir = opts.dataDir ?? join(dir!, 'data');
  const server = await startStandin({ addr: '127.0.0.1:0', dataDir, devBootstrap: true, accessLog: 'off', log: () => undefined, ...opts });
  return {
    ...server,
    dataDir,
    async cleanup() {
      await server.stop(100);
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The owner's session through the dev-bootstrap magic link. */
export async function ownerSession(base: string): Promise<string> {
  const requested = await call(base, 'POST', '/api/auth/magic/request', { body: { email: 'local@clickclack.chat' } });
  const consumed = await call(base, 'POST', '/api/auth/magic/consume', { body: { token: requested.body.token } });
  return consumed.body.token as string;
}

/** A socket that records every event and its close. */
export interface RecordingSocket {
  events: Record<string, unknown>[];
  protocol: () => string;
  closed: Promise<{ code: number; reason: string }>;
  opened: Promise<void>;
  /** Waits until `n` events arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<Record<string, unknown>[]>;
  close(): void;
}

export function openSocket(base: string, query: Record<string, string>, auth: { header?: string; protocol?: string }): RecordingSocket {
  const url = `${base.replace(/^http/, 'ws')}/api/realtime/ws?${new URLSearchParams(query)}`;
  const socket = new WebSocket(url, auth.protocol ? [auth.protocol] : [], { headers: auth.header ? { authorization: `Bearer ${auth.header}` } : {} });
  const events: Record<string, unknown>[] = [];
  socket.on('message', (data) => events.push(JSON.parse(data.toString()) as Record<string, unknown>));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    socket.on('unexpected-response', (_req, res) => resolve({ code: 0, reason: String(res.statusCode) }));
    socket.on('error', () => undefined);
  });
  const opened = new Promise<void>((resolve) => socket.on('open', () => resolve()));
  return {
    events,
    protocol: () => socket.protocol,
    closed,
    opened,
    async waitFor(n, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (events.length < n) {
        if (Date.now() > deadline) throw new Error(`only ${events.length} of ${n} events within ${timeoutMs} ms: ${JSON.stringify(events.map((e) => e.type))}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return events.slice(0, n);
    },
    close: () => socket.close(),
  };
}
