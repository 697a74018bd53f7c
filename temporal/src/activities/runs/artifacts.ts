import { readFile, stat } from 'node:fs/promises';
import { isAbsolute, normalize, sep } from 'node:path';
import { checkPath } from '@keelson/platform';
import { runLimits } from '@keelson/schema';
import type { RunArtifact } from '@keelson/ribs-contract';

/** A run file a gate's prompt names as `$ARTIFACTS_DIR/<path>` (seed 000 `getRunStatus`). */
const REFERENCE = /\$(?:\{ARTIFACTS_DIR\}|ARTIFACTS_DIR)\/([^\s'"`<>()[\]{},;|]+)/g;

/** The distinct paths a prompt names under `$ARTIFACTS_DIR/`, in order of first mention, at most 4. */
export function artifactPaths(prompt: string, limit: number = runLimits.artifactFiles): string[] {
  const seen: string[] = [];
  for (const match of prompt.matchAll(REFERENCE)) {
    // A sentence may end right after the path: "see $ARTIFACTS_DIR/plan.md."
    const path = match[1]!.replace(/[.:!?]+$/, '');
    if (path && !seen.includes(path)) seen.push(path);
    if (seen.length === limit) break;
  }
  return seen;
}

/**
 * Reads the files a prompt names, each cut to 32,000 characters; a file that cannot be read (missing,
 * a directory, outside the artifacts directory through `..` or a symlink) carries `error` instead.
 */
export async function readArtifacts(artifactsDir: string, prompt: string): Promise<RunArtifact[]> {
  return Promise.all(artifactPaths(prompt).map((path) => readOne(artifactsDir, path)));
}

async function readOne(root: string, path: string): Promise<RunArtifact> {
  const rel = normalize(path);
  if (isAbsolute(rel) || rel === '..' || rel.startsWith(`..${sep}`)) {
    return { path, error: "outside the run's artifacts directory" };
  }
  const checked = checkPath(rel, { roots: [root], cwd: root });
  if (!checked.ok) return { path, error: "outside the run's artifacts directory (symlink)" };
  const real = checked.path;
  try {
    if ((await stat(real)).isDirectory()) return { path, error: 'is a directory' };
    const text = await readFile(real, 'utf8');
    const max = runLimits.artifactChars;
    return text.length > max ? { path, text: text.slice(0, max), truncated: true } : { path, text, truncated: false };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { path, error: code === 'ENOENT' ? 'not found' : code === 'EACCES' ? 'permission denied' : (err as Error).message };
  }
}
