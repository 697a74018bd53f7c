import { createHash } from 'node:crypto';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join, relative } from 'node:path';

/**
 * Every entry beneath `root` as `path type detail` (file: mode and content hash; symlink: target),
 * sorted: two snapshots are equal exactly when nothing beneath `root` was added, removed or changed.
 */
export async function snapshotTree(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const name of await readdir(dir)) {
      const abs = join(dir, name);
      const rel = relative(root, abs);
      const st = await lstat(abs);
      if (st.isSymbolicLink()) out.push(`${rel} link -> ${await readlink(abs)}`);
      else if (st.isDirectory()) {
        out.push(`${rel}/ dir`);
        await walk(abs);
      } else {
        const hash = createHash('sha1').update(await readFile(abs)).digest('hex');
        out.push(`${rel} file ${(st.mode & 0o777).toString(8)} ${hash}`);
      }
    }
  };
  await walk(root);
  return out.sort();
}
