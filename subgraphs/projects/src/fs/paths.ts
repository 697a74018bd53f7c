import { lstat, mkdir, readdir, rm, rmdir, stat } from 'node:fs/promises';
import { dirname, sep } from 'node:path';
import { canonicalPath, SymlinkLoopError } from '@keelson/platform';
import { MeshError } from '@keelson/schema';

/**
 * The canonical form of a path that may not exist yet, as the kernel would resolve it (the mesh's one
 * resolver, `canonicalPath` of @keelson/platform): every symlink followed, `..` taken from the
 * resolved parent (`link/..` is the parent of the link's target, not the folder holding the link), a
 * missing tail joined as written. A symlink alias and its target compare equal.
 * @throws MeshError BAD_USER_INPUT for a symlink loop
 */
export async function canonicalPathAsync(p: string): Promise<string> {
  try {
    return canonicalPath(p, process.cwd());
  } catch (err) {
    if (err instanceof SymlinkLoopError) throw new MeshError('BAD_USER_INPUT', `${p}: ${err.message}`);
    throw err;
  }
}

export type TargetState = 'missing' | 'empty-dir' | 'git-repo' | 'populated-dir' | 'not-a-dir';

/** What is at a project root before creation decides what creation may do there. */
export async function inspectTarget(root: string): Promise<TargetState> {
  const st = await stat(root).catch(() => undefined);
  if (!st) {
    // A dangling symlink is something the user put there: never create through it.
    const link = await lstat(root).catch(() => undefined);
    return link ? 'not-a-dir' : 'missing';
  }
  if (!st.isDirectory()) return 'not-a-dir';
  const entries = await readdir(root);
  if (entries.length === 0) return 'empty-dir';
  if (entries.includes('.git')) return 'git-repo';
  return 'populated-dir';
}

/** Creates `dir` and any missing parents; returns the topmost directory it created, if any. */
export async function mkdirTracked(dir: string): Promise<string | undefined> {
  const first = await mkdir(dir, { recursive: true });
  return first ?? undefined;
}

/** Removes what an operation created; returns an error message instead of throwing. */
export async function removeCreated(path: string | undefined): Promise<string | undefined> {
  if (!path) return undefined;
  try {
    await rm(path, { recursive: true, force: true });
    return undefined;
  } catch (err) {
    return `cleanup of ${path} failed: ${(err as Error).message}`;
  }
}

/**
 * Removes what an operation made with {@link mkdirTracked}: `dir` with everything in it, then each
 * folder above it up to `top` (the first folder that call created) while it is empty. A parent that
 * another operation has put something in meanwhile (a project created beside this one in a workspace
 * root both needed) stays, with everything above it. Returns an error message instead of throwing.
 */
export async function removeCreatedTree(dir: string, top: string | undefined): Promise<string | undefined> {
  const failed = await removeCreated(dir);
  if (failed || !top) return failed;
  for (let p = dirname(dir); p === top || p.startsWith(top + sep); p = dirname(p)) {
    try {
      await rmdir(p);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') return undefined;
      if (code !== 'ENOENT') return `cleanup of ${p} failed: ${(err as Error).message}`;
    }
  }
  return undefined;
}

export async function exists(p: string): Promise<boolean> {
  return lstat(p).then(() => true, () => false);
}
