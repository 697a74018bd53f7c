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
 * target, not the directory holding the link. Once a component does not exist, it and every later
 * one stay as written: a missing file resolves to its nearest existing parent's realpath joined with
 * the rest. A symlink cannot smuggle a path out of a root this way.
 * @throws SymlinkLoopError on a symlink loop (more than 40 links on the way)
 */
export function canonicalPath(p: string, cwd: string): string {
  const expanded = p === '~' ? homedir() : p.startsWith('~/') ? join(homedir(), p.slice(2)) : p;
  const budget = { links: MAX_SYMLINKS };
  // Joined as text, not with path.join: `link/..` must reach the resolver unnormalized.
  return follow(isAbsolute(expanded) ? expanded : `${isAbsolute(cwd) ? cwd : resolve(cwd)}${sep}${expanded}`, budget, p);
}

function follow(absolute: string, budget: { links: number }, original: string): string {
  let current: string = sep;
  let missing = false;
  for (const part of absolute.split(sep)) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      current = dirname(current);
      continue;
    }
    const next = join(current, part);
    if (missing) {
      current = next;
      continue;
    }
    let link: string | undefined;
    try {
      link = lstatSync(next).isSymbolicLink() ? readlinkSync(next) : undefined;
    } catch {
      // Not there (or not readable): this and every later component stay as written.
      missing = true;
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
