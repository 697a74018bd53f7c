import { canonicalPath, checkPath, confinePath, ConfinementError, isInside, type PathAccess } from '@keelson/platform';
import type { ToolContext } from '@keelson/ribs-contract';

/** A refusal a built-in tool reports as its `isError` result (never a crash of the tool). */
export class ToolRefusal extends Error {}

type Confinement = Pick<ToolContext, 'cwd' | 'allowedDirectories'>;

/**
 * `p` canonicalized against the turn's cwd by the platform's `confinePath` (symlinks followed, `..`
 * resolved physically), refused when the turn is confined and it lands outside every root; a
 * `write` is also refused inside `.git` or `.keelson`. Tools operate on the returned path, so what
 * was checked is what is touched.
 */
export function confinedToolPath(ctx: Confinement, p: string, access: PathAccess = 'read'): string {
  try {
    return confinePath(p, { roots: ctx.allowedDirectories ?? [], cwd: ctx.cwd, access, scope: `the turn's allowed directories (${(ctx.allowedDirectories ?? []).join(', ')})` });
  } catch (err) {
    if (err instanceof ConfinementError) throw new ToolRefusal(err.message);
    throw err;
  }
}

/** Whether a path is inside the turn's roots (always, for an unconfined turn). */
export function isAllowed(ctx: Confinement, path: string): boolean {
  return checkPath(path, { roots: ctx.allowedDirectories ?? [], cwd: ctx.cwd }).ok;
}

/** How a path is shown to the model: relative to the cwd when below it, else absolute. */
export function displayPath(cwd: string, canonical: string): string {
  let base: string;
  try {
    base = canonicalPath(cwd, cwd);
  } catch {
    return canonical;
  }
  if (canonical === base) return '.';
  return isInside(base, canonical) ? canonical.slice(base.endsWith('/') ? base.length : base.length + 1) : canonical;
}
