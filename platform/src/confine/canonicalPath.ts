import { lstatSync, readlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';

/** Symlinks followed while canonicalizing one path before giving up (Linux's own limit). */
const MAX_SYMLINKS = 40;

/** Thrown for a path that cannot be canonicalized (a symlink loop). */
export class SymlinkLoopError extends Error {
  constructor(path: string) {
    super(`too many levels of symbolic links resolving '${path}'`);
    this.name = 'SymlinkLoopError';
  }
}

/**
 * The canonical form of `p`: `~` expanded, made absolute against `cwd`, then resolved component by
 * component the way the kernel does — every symlink followed (a dangling one to the target a write
 * would create) and `..` taken from the resolved parent, so `link/..` is the parent of the link's
 * target, not the directory holding the link. Once a component does not exist, the components after
 * it stay as written (a missing file resolves to its nearest existing parent's realpath joined with
 * the rest) — until a `..` climbs back out of the missing part: from there on every component is
 * resolved again, so `nope/../link/x` follows `link` like `link/x` does. A symlink cannot smuggle a
 * path out of a root this way.
 * @throws SymlinkLoopError on a symlink loop (more than 40 links on the way)
 */
export function canonicalPath(p: string, cwd: string): string {
  const expanded = p === '~' ? homedir() : p.startsWith('~/') ? join(homedir(), p.slice(2)) : p;
  const budget = { links: MAX_SYMLINKS };
  // Joined as text, not with path.join: `link/..` must reach the resolver unnormalized.
  return follow(isAbsolute(expanded) ? expanded : `${isAbsolute(cwd) ? cwd : resolve(cwd)}${sep}${expanded}`, budget, p);
}

const depth = (p: string) => p.split(sep).filter(Boolean).length;

function follow(absolute: string, budget: { links: number }, original: string): string {
  let current: string = sep;
  /** The depth of the first missing component in `current`, while `current` runs through one. */
  let missingAt: number | undefined;
  for (const part of absolute.split(sep)) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      current = dirname(current);
      // Back in a directory that exists (resolved): what follows is resolved again, not taken as written.
      if (missingAt !== undefined && depth(current) < missingAt) missingAt = undefined;
      continue;
    }
    const next = join(current, part);
    if (missingAt !== undefined) {
      current = next;
      continue;
    }
    let link: string | undefined;
    try {
      link = lstatSync(next).isSymbolicLink() ? readlinkSync(next) : undefined;
    } catch {
      // Not there (or not readable): the components after it stay as written while below it.
      missingAt = depth(next);
    }
    if (link === undefined) {
      current = next;
      continue;
    }
    if (--budget.links < 0) throw new SymlinkLoopError(original);
    current = follow(isAbsolute(link) ? link : `${current}${sep}${link}`, budget, original);
  }
  return current;
}

/**
 * True when `p` is `root` or below it. Both must already be canonical; the test is by whole
 * components, so `/a/bc` is not inside `/a/b`.
 */
export function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}
