import type { promises as fsp } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { ConfinementError, openConfinedForRead, openConfinedForWrite } from '@keelson/platform';
import { ToolRefusal } from './confine';

/** Bytes sniffed for a NUL to call a file binary. */
const SNIFF_BYTES = 8192;

/** True when the first bytes of the open file hold a NUL (how git and grep tell binary files). */
export async function looksBinary(handle: fsp.FileHandle): Promise<boolean> {
  const buffer = Buffer.alloc(SNIFF_BYTES);
  const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0);
  return buffer.subarray(0, bytesRead).includes(0);
}

/** One line as read: its number, its text cut at the line cap, and whether it was cut. */
export interface ReadLine {
  number: number;
  text: string;
  cut: boolean;
}

/**
 * Lines `from` (1-based) onwards of an open file, each cut at `maxLineChars`, read in chunks with
 * bounded memory however long a line is. `onLine` returns false to stop early; resolves whether the
 * file ended (rather than being stopped) and how many lines were seen.
 */
export async function readLines(
  handle: fsp.FileHandle,
  from: number,
  maxLineChars: number,
  onLine: (line: ReadLine) => boolean,
  signal?: AbortSignal,
): Promise<{ ended: boolean; lines: number }> {
  const decoder = new StringDecoder('utf8');
  const chunk = Buffer.alloc(64 * 1024);
  let number = 1;
  let text = '';
  let cut = false;
  let partial = false;
  let position = 0;
  const push = (piece: string) => {
    if (piece.length > 0) partial = true;
    if (number < from || cut) return;
    if (text.length + piece.length > maxLineChars) {
      text += piece.slice(0, maxLineChars - text.length);
      cut = true;
    } else text += piece;
  };
  const finish = (): boolean => {
    const keep = number < from || onLine({ number, text: text.replace(/\r$/, ''), cut });
    number += 1;
    text = '';
    cut = false;
    partial = false;
    return keep;
  };
  for (;;) {
    if (signal?.aborted) return { ended: false, lines: number - 1 };
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    position += bytesRead;
    const decoded = bytesRead === 0 ? decoder.end() : decoder.write(chunk.subarray(0, bytesRead));
    let start = 0;
    for (let nl = decoded.indexOf('\n'); nl !== -1; nl = decoded.indexOf('\n', start)) {
      push(decoded.slice(start, nl));
      start = nl + 1;
      if (!finish()) return { ended: false, lines: number - 1 };
    }
    push(decoded.slice(start));
    if (bytesRead === 0) {
      // A last line without a newline still counts.
      if (partial) finish();
      return { ended: true, lines: number - 1 };
    }
  }
}

/** {@link openConfinedForRead} of @keelson/platform, its refusal a tool's. */
export async function openForRead(path: string): Promise<fsp.FileHandle> {
  return refusing(() => openConfinedForRead(path));
}

/** {@link openConfinedForWrite} of @keelson/platform, its refusal a tool's. */
export async function openForWrite(path: string): Promise<{ handle: fsp.FileHandle; created: boolean }> {
  return refusing(() => openConfinedForWrite(path));
}

async function refusing<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ConfinementError) throw new ToolRefusal(err.message);
    throw err;
  }
}
