import { relative, sep } from 'node:path';
import { MeshError } from '@keelson/schema';
import { canonicalPath, isInside, SymlinkLoopError } from './canonicalPath';

/**
 * Directory names agents may read but never write, wherever they sit below an allowed root: a
 * repository's `.git` (hooks and config there run outside any sandbox the next time someone runs git)
 * and the project's `.keelson` (its own workflows).
 */
export const PROTECTED_DIR_NAMES: readonly string[] = ['.git', '.keelson'];

/** `read` checks the roots; `write` also refuses a protected directory (see {@link PROTECTED_DIR_NAMES}). */
export type PathAccess = 'read' | 'write';

export interface ConfineOptions {
  /** The directories the path must stay inside (any one of them). Empty: the path is not confined to roots. */
  roots: readonly string[];
  /** What a relative path (and each relative root) is resolved against. @default the first root, else process.cwd() */
  cwd?: string;
  /** @default 'read' */
  access?: PathAccess;
  /** How the path is named in an error. @default 'path' */
  what?: string;
  /** How the roots are named in an error. @default "the allowed directories (<roots>)" */
  scope?: string;
}

/** Why a path was refused. */
export type ConfinementReason = 'outside' | 'protected' | 'unresolvable' | 'changed';

/** A path refused by {@link confinePath}: a `FORBIDDEN` MeshError naming the path and the reason. */
export class ConfinementError extends MeshError {
  constructor(
    message: string,
    readonly reason: ConfinementReason,
    readonly path: string,
  ) {
    super('FORBIDDEN', message, { reason, path });
  }
}

/** The protected directory (`<root>/…/.git`) holding canonical `p`, if any, for the given canonical roots. */
export function protectedDirOf(canonicalRoots: readonly string[], p: string): string | undefined {
  for (const root of canonicalRoots) {
    if (!isInside(root, p)) continue;
    const parts = relative(root, p).split(sep);
    const at = parts.findIndex((part) => PROTECTED_DIR_NAMES.includes(part));
    if (at !== -1) return [root, ...parts.slice(0, at + 1)].join(sep);
  }
  return undefined;
}

/**
 * The one path-confinement check of the mesh: `target` canonicalized (see {@link canonicalPath}:
 * `..`, absolute paths, every symlink, a missing file through its nearest existing parent), then
 * required to be one of the roots or below one (by whole components: `/a/bc` is not below `/a/b`).
 * A `write` is also refused inside a `.git` or `.keelson` directory below a root (or below the cwd
 * when there are no roots); a `read` there is allowed. Callers operate on the returned canonical
 * path, so what was checked is what is touched.
 * @throws ConfinementError (`FORBIDDEN`) naming the path and why
 */
export function confinePath(target: string, opts: ConfineOptions): string {
  const what = opts.what ?? 'path';
  const cwd = opts.cwd ?? opts.roots[0] ?? process.cwd();
  let canonical: string;
  let roots: string[];
  try {
    canonical = canonicalPath(target, cwd);
    roots = opts.roots.map((root) => canonicalPath(root, cwd));
  } catch (err) {
    if (err instanceof SymlinkLoopError) throw new ConfinementError(`${what} '${target}': ${err.message}`, 'unresolvable', target);
    throw err;
  }
  if (roots.length > 0 && !roots.some((root) => isInside(root, canonical))) {
    const scope = opts.scope ?? `the allowed directories (${opts.roots.join(', ')})`;
    throw new ConfinementError(`${what} '${target}' resolves outside ${scope}`, 'outside', target);
  }
  if (opts.access === 'write') {
    const guarded = roots.length > 0 ? roots : [canonicalPath(cwd, cwd)];
    const dir = protectedDirOf(guarded, canonical);
    if (dir) throw new ConfinementError(`${what} '${target}' is inside ${dir}: agents may read .git and .keelson directories but not write them`, 'protected', target);
  }
  return canonical;
}

/**
 * Like {@link confinePath}, answering instead of throwing: the canonical path, or the refusal.
 */
export function checkPath(target: string, opts: ConfineOptions): { ok: true; path: string } | { ok: false; error: ConfinementError } {
  try {
    return { ok: true, path: confinePath(target, opts) };
  } catch (err) {
    if (err instanceof ConfinementError) return { ok: false, error: err };
    throw err;
  }
}
