import { dirname, sep } from 'node:path';
import { MeshError } from '@keelson/schema';
import { canonicalPathAsync } from './paths';

/** Whether `inner` is `outer` or lies beneath it (both canonical, absolute). */
function within(inner: string, outer: string): boolean {
  return inner === outer || outer === dirname(outer) || inner.startsWith(outer.endsWith(sep) ? outer : outer + sep);
}

/**
 * Why a canonical root may not be a project root, or null when it may: the filesystem root, the
 * Keelson home, anything inside the home (the credentials key, the CLI homes, the worktrees), and
 * anything above it (a project there would contain the home). Pure: both paths already canonical.
 */
export function forbiddenRootReason(canonicalRoot: string, canonicalHome: string): string | null {
  if (canonicalRoot === dirname(canonicalRoot)) return 'is the filesystem root';
  if (canonicalRoot === canonicalHome) return 'is the Keelson home (KEELSON_HOME)';
  if (within(canonicalRoot, canonicalHome)) return `is inside the Keelson home (KEELSON_HOME, ${canonicalHome})`;
  if (within(canonicalHome, canonicalRoot)) return `contains the Keelson home (KEELSON_HOME, ${canonicalHome})`;
  return null;
}

/**
 * Canonicalizes a would-be project root (symlinks of its existing part resolved, `..` and trailing
 * slashes gone) and refuses it with BAD_USER_INPUT naming `field` when `forbiddenRootReason` says so
 * — before anything is written. Resolves with the canonical root.
 */
export async function allowedProjectRoot(root: string, keelsonHome: string, field: string): Promise<string> {
  const [canonicalRoot, canonicalHome] = await Promise.all([canonicalPathAsync(root), canonicalPathAsync(keelsonHome)]);
  const reason = forbiddenRootReason(canonicalRoot, canonicalHome);
  if (reason) {
    const shown = canonicalRoot === root ? root : `${root} (${canonicalRoot})`;
    throw new MeshError(
      'BAD_USER_INPUT',
      `${field}: ${shown} ${reason}; a project root must lie outside the Keelson home — neither in it nor above it — ` +
        "which holds the mesh's own state (credentials key, CLI homes, worktrees)",
    );
  }
  return canonicalRoot;
}
