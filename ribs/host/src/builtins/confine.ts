import type { ToolContext } from '@keelson/shared';
import { canonicalPath, isInside } from '../policy/pathConfinement';

/** A refusal a built-in tool reports as its `isError` result (never a crash of the tool). */
export class ToolRefusal extends Error {}

/**
 * `p` canonicalized against the turn's cwd (symlinks followed, `..` resolved physically), refused
 * when the turn is confined and it lands outside every root. Tools operate on the returned path, so
 * what was checked is what is touched.
 */
export function confinedPath(ctx: Pick<ToolContext, 'cwd' | 'allowedDirectories'>, p: string): string {
  let canonical: string;
  try {
    canonical = canonicalPath(p, ctx.cwd);
  } catch (err) {
    throw new ToolRefusal(`path '${p}': ${(err as Error).message}`);
  }
  if (!isAllowed(ctx, canonical)) {
    throw new ToolRefusal(`path '${p}' resolves outside the turn's allowed directories (${(ctx.allowedDirectories ?? []).join(', ')})`);
  }
  return canonical;
}

/** Whether a canonical path is inside the turn's roots (always, for an unconfined turn). */
export function isAllowed(ctx: Pick<ToolContext, 'cwd' | 'allowedDirectories'>, canonical: string): boolean {
  const roots = ctx.allowedDirectories ?? [];
  return roots.length === 0 || roots.some((root) => isInside(canonicalPath(root, ctx.cwd), canonical));
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
