import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The records of a JSONL file, [] when it is missing. */
export async function readJsonlFile<T>(dir: string, name: string): Promise<T[]> {
  if (!/^[0-9A-Za-z_-]+\.jsonl$/.test(name)) return [];
  const text = await readFile(join(dir, name), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
}
