import { open } from 'node:fs/promises';
import { confinedPath, readFileInside } from '../confine';

/** Parses JSON lines, skipping blank and malformed ones (a CLI may be mid-write). */
export function parseJsonl(text: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      const v: unknown = JSON.parse(line);
      if (v && typeof v === 'object' && !Array.isArray(v)) out.push(v as Record<string, unknown>);
    } catch {
      // A partial last line or foreign content.
    }
  }
  return out;
}

/** Every record of a JSONL file inside the store `root` (realpath-confined); [] when it is missing. */
export async function readJsonl(root: string, file: string): Promise<Record<string, unknown>[]> {
  const text = await readFileInside(root, file);
  return text === null ? [] : parseJsonl(text);
}

/** The records of the first `bytes` of a JSONL file inside `root` (enough for headers and first prompts). */
export async function readJsonlHead(root: string, file: string, bytes = 256 * 1024): Promise<Record<string, unknown>[]> {
  let real: string;
  try {
    real = await confinedPath(root, file);
  } catch {
    return [];
  }
  let handle;
  try {
    handle = await open(real, 'r');
  } catch {
    return [];
  }
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await handle.read(buf, 0, bytes, 0);
    const text = buf.subarray(0, bytesRead).toString('utf8');
    // A cut last line is dropped by the parser.
    return parseJsonl(bytesRead === bytes ? text.slice(0, text.lastIndexOf('\n')) : text);
  } finally {
    await handle.close();
  }
}
