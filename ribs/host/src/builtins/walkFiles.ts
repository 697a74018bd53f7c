import { readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** @default entries one walk visits before it stops (a whole home directory is not a project) */
export const WALK_MAX_ENTRIES = 200_000;

export interface WalkOptions {
  /** Directory names never entered. */
  skipDirs: ReadonlySet<string>;
  signal?: AbortSignal;
  /** @default 200000 */
  maxEntries?: number;
}

/**
 * The files below `root` as `/`-separated relative paths, breadth first, in name order per
 * directory. Symlinks are listed but never followed (no loops, no way out of the root);
 * unreadable directories are skipped. `complete` is false when the entry budget ran out.
 */
export async function walkFiles(root: string, opts: WalkOptions): Promise<{ files: string[]; complete: boolean }> {
  const budget = opts.maxEntries ?? WALK_MAX_ENTRIES;
  const files: string[] = [];
  const queue: string[] = [''];
  let seen = 0;
  while (queue.length > 0) {
    if (opts.signal?.aborted) return { files, complete: false };
    const rel = queue.shift()!;
    let entries;
    try {
      entries = await readdir(join(root, rel), { withFileTypes: true });
    } catch {
      continue;
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (++seen > budget) return { files, complete: false };
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!opts.skipDirs.has(entry.name)) queue.push(path);
      } else if (entry.isFile() || entry.isSymbolicLink()) files.push(path);
    }
  }
  return { files, complete: true };
}
