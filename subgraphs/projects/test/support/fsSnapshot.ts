import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Every entry beneath `root` as `path type detail` (file: mode and content hash; symlink: target),
 * sorted: two snapshots are equal exactly when nothing beneath `root` was added, removed or changed.
 * Synchronous inside: a snapshot reads a thousand small files (every project's .git), which one
 * blocking pass does in milliseconds where a sequence of awaited reads takes seconds on a busy machine.
 */
export async function snapshotTree(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const abs = join(dir, name);
      const rel = relative(root, abs);
      const st = lstatSync(abs);
      if (st.isSymbolicLink()) out.push(`${rel} link -> ${readlinkSync(abs)}`);
      else if (st.isDirectory()) {
        out.push(`${rel}/ dir`);
        walk(abs);
      } else {
        const hash = createHash('sha1').update(readFileSync(abs)).digest('hex');
        out.push(`${rel} file ${(st.mode & 0o777).toString(8)} ${hash}`);
      }
    }
  };
  walk(root);
  return out.sort();
}
