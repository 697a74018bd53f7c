import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Frame } from './protocols/frames';

/** Waits `ms`, or less if `signal` aborts (the client went away). */
export async function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return;
  try {
    await sleep(ms, undefined, { signal });
  } catch {
    // Aborted: the caller checks the signal.
  }
}

/** Writes a JSON body. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.destroyed) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * Streams frames as server-sent events. With `durationMs`, the stream takes that long: the first
 * delta goes out at once and the rest are spaced evenly (a stream without two deltas waits before
 * its closing frames). It stops as soon as the client disconnects.
 */
export async function sendStream(res: ServerResponse, frames: Frame[], durationMs: number, signal: AbortSignal, headers: Record<string, string> = {}): Promise<void> {
  if (signal.aborted) return;
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', ...headers });
  res.flushHeaders();
  const deltas = frames.filter((f) => f.delta).length;
  const gap = deltas > 1 ? durationMs / (deltas - 1) : 0;
  let sent = 0;
  let waited = deltas > 1 || durationMs <= 0;
  for (const [i, frame] of frames.entries()) {
    if (frame.delta) {
      if (sent > 0) await pause(gap, signal);
      sent++;
    } else if (!waited && i > 0 && sent === deltas) {
      await pause(durationMs, signal);
      waited = true;
    }
    if (signal.aborted) return;
    res.write(`${frame.event ? `event: ${frame.event}\n` : ''}data: ${frame.data}\n\n`);
  }
  res.end();
}
