import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { canonicalPath, confinePath, isInside, openConfinedForRead } from '@keelson/platform';
import { MeshError } from '@keelson/schema';

/** True when `candidate` is `root` or beneath it (both canonical; whole components). */
export const within = isInside;

/** The realpath of `p`, or of its deepest existing ancestor joined with the rest (for paths not created yet); see the platform's `canonicalPath`. */
export async function realpathDeep(p: string): Promise<string> {
  return canonicalPath(p, process.cwd());
}

/**
 * `target` (absolute, or relative to `root`) resolved through every symlink, provided it stays
 * inside `root` (itself resolved) — the platform's `confinePath`. The mesh's own file operations on
 * a session's files go through this: a `..` or a symlink pointing out of the root is refused,
 * whatever the CLI put there.
 * @throws MeshError FORBIDDEN naming the path and the root.
 */
export async function confinedPath(root: string, target: string, what = 'path'): Promise<string> {
  return confinePath(target, { roots: [root], cwd: root, what });
}

/** Reads a file only if its realpath is inside `root` (a native store), else null. */
export async function readFileInside(root: string, file: string): Promise<string | null> {
  try {
    const real = await confinedPath(root, file);
    // Opened only if the descriptor is still that path (a folder swapped for a link since is refused).
    const handle = await openConfinedForRead(real);
    try {
      return await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (err instanceof MeshError || (err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * The entries of `dir` that are real directories or files (symlinks are skipped: a store scan never
 * follows a link out of the store). Missing directories read as empty.
 */
export async function listDir(dir: string, kind: 'dir' | 'file'): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
  const out: string[] = [];
  for (const name of names) {
    try {
      const st = await lstat(join(dir, name));
      if (kind === 'dir' ? st.isDirectory() : st.isFile()) out.push(name);
    } catch {
      // Vanished between readdir and lstat.
    }
  }
  return out.sort();
}
