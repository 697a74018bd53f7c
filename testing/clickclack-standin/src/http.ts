import type { IncomingMessage } from 'node:http';

/** The most a JSON request body may hold (SWARM.md §5). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** A failure answered as `{"error": message}` with its status. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** What a handler answers. */
export interface Reply {
  status: number;
  body: unknown;
}

export const ok = (body: unknown, status = 200): Reply => ({ status, body });

/** Reads a JSON object body (at most 1 MiB; an empty body is `{}`). */
export async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, 'request body too large');
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (!text.trim()) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'invalid JSON body');
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new HttpError(400, 'the body must be a JSON object');
  return value as Record<string, unknown>;
}

/** A required non-empty string field. */
export function requiredField(body: Record<string, unknown>, field: string): string {
  const v = body[field];
  if (typeof v !== 'string' || v.trim() === '') throw new HttpError(400, `${field} is required`);
  return v;
}

/** An optional string field (absent, null or a string). */
export function optStr(body: Record<string, unknown>, field: string): string | undefined {
  const v = body[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new HttpError(400, `${field} must be a string`);
  return v;
}

/** True for an address only this machine can reach. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (!address) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}

function isLocalHostname(host: string): boolean {
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

/**
 * The dev-auth conditions (SWARM.md §1.2 rules 4 and 5): a loopback peer whose `Host`, `Origin` and
 * forwarded headers, where present, all name this machine.
 */
export function isLocalRequest(req: IncomingMessage): boolean {
  if (!isLoopbackAddress(req.socket.remoteAddress)) return false;
  const host = req.headers.host;
  if (!host || !isLocalHostname(host)) return false;
  const origin = req.headers.origin;
  if (origin) {
    try {
      if (!isLocalHostname(new URL(origin).host)) return false;
    } catch {
      return false;
    }
  }
  for (const h of ['x-forwarded-for', 'x-forwarded-host', 'forwarded']) {
    const v = req.headers[h];
    if (v === undefined) continue;
    const text = Array.isArray(v) ? v.join(',') : v;
    if (!text.split(',').every((part) => /127\.|localhost|::1/.test(part))) return false;
  }
  return true;
}
