import { existsSync, lstatSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import fc from 'fast-check';
import { confinePath, ConfinementError, isInside, PROTECTED_DIR_NAMES, type PathAccess } from './index';

/**
 * Property-based confinement: random trees (directories, files, symlinks that are absolute or
 * relative, chained, dangling, leading outside or into `.git`) and random paths (`..`, `.`, empty and
 * unicode components, missing names, absolute prefixes), checked against the kernel as the reference
 * model. TREES × PATHS_PER_TREE paths are checked, each for read and for write.
 */
const TREES = 20;
const PATHS_PER_TREE = 500;

const NAMES = ['a', 'b', 'l1', 'l2', 'ü', 'nope', '.git', '.keelson', 'hooks'] as const;
const PATH_PARTS = [...NAMES, '..', '.', ''] as const;

type Entry =
  | { kind: 'dir' | 'file'; at: string[] }
  | { kind: 'link'; at: string[]; to: { base: 'root' | 'outside' | 'relative'; parts: string[] } };
type LinkEntry = Extract<Entry, { kind: 'link' }>;

const name = fc.constantFrom(...NAMES);
const entry: fc.Arbitrary<Entry> = fc.oneof(
  fc.record({ kind: fc.constantFrom('dir' as const, 'file' as const), at: fc.array(name, { minLength: 1, maxLength: 3 }) }),
  fc.record({
    kind: fc.constant('link' as const),
    at: fc.array(name, { minLength: 1, maxLength: 3 }),
    to: fc.record({ base: fc.constantFrom('root' as const, 'outside' as const, 'relative' as const), parts: fc.array(fc.constantFrom(...PATH_PARTS), { maxLength: 4 }) }),
  }),
);
const pathArb = fc.record({
  prefix: fc.constantFrom('' as const, 'root' as const, 'outside' as const),
  parts: fc.array(fc.constantFrom(...PATH_PARTS), { minLength: 1, maxLength: 7 }),
});

/** Builds the tree; entries that collide with what is there (or need a parent that is not a directory) are skipped. */
function build(base: string, entries: Entry[]): { root: string; outside: string } {
  const root = join(base, 'root');
  const outside = join(base, 'outside');
  for (const dir of [join(root, '.git', 'hooks'), join(root, '.keelson', 'workflows'), join(outside, 'a')]) mkdirSync(dir, { recursive: true });
  writeFileSync(join(outside, 'secret'), 'secret');
  for (const e of entries) {
    const at = join(root, ...e.at);
    try {
      if (lstatExists(at)) continue;
      mkdirSync(dirname(at), { recursive: true });
      if (e.kind === 'dir') mkdirSync(at);
      else if (e.kind === 'file') writeFileSync(at, 'x');
      else {
        const link = e as LinkEntry;
        const to = link.to.base === 'relative' ? link.to.parts.join('/') || '.' : join(link.to.base === 'root' ? root : outside, ...link.to.parts);
        symlinkSync(to, at);
      }
    } catch {
      // A parent is a file or a link: that entry does not exist in this tree.
    }
  }
  return { root, outside };
}

function lstatExists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Where the kernel would act for canonical `p`: its deepest existing ancestor's realpath plus the rest (which mkdir -p creates as plain directories). */
function physical(p: string): string {
  let existing = p;
  const rest: string[] = [];
  while (!existsSync(existing)) {
    rest.unshift(existing.slice(dirname(existing).length + 1));
    existing = dirname(existing);
  }
  return join(realpathSync.native(existing), ...rest);
}

const protectedUnder = (root: string, p: string) => relative(root, p).split(sep).some((part) => PROTECTED_DIR_NAMES.includes(part));

/** The kernel's own resolution of the whole path, or undefined when it cannot (missing, loop, not a directory). */
function kernelRealpath(p: string): string | undefined {
  try {
    // realpath(3): the kernel's walk (`link/..` is the target's parent). The JS realpathSync collapses `..` as text first.
    return realpathSync.native(p);
  } catch {
    return undefined;
  }
}

describe('confinePath, property-based against the kernel', () => {
  it(`never lets a generated path out of its root or into a protected folder, and refuses no path the kernel resolves inside (${TREES} trees × ${PATHS_PER_TREE} paths)`, () => {
    let checked = 0;
    fc.assert(
      fc.property(fc.array(entry, { minLength: 4, maxLength: 24 }), fc.array(pathArb, { minLength: PATHS_PER_TREE, maxLength: PATHS_PER_TREE }), (entries, paths) => {
        const base = realpathSync(mkdtempSync(join(tmpdir(), 'keelson-confine-prop-')));
        try {
          const { root, outside } = build(base, entries);
          for (const generated of paths) {
            const raw = generated.parts.join('/');
            const target = generated.prefix === '' ? raw : `${generated.prefix === 'root' ? root : outside}/${raw}`;
            const full = isAbsolute(target) ? target : `${root}/${target}`;
            const kernel = kernelRealpath(full);
            for (const access of ['read', 'write'] as PathAccess[]) {
              checked++;
              let result: string | ConfinementError;
              try {
                result = confinePath(target, { roots: [root], access });
              } catch (err) {
                if (!(err instanceof ConfinementError)) throw err;
                result = err;
              }
              if (typeof result === 'string') {
                // Safety: what the tools then touch is inside the root, and never a protected folder for a write.
                const where = physical(result);
                expect({ target, access, where, inside: isInside(root, where) }).toEqual({ target, access, where, inside: true });
                if (access === 'write') expect({ target, where, protected: protectedUnder(root, where) }).toEqual({ target, where, protected: false });
              }
              // Usefulness: a path the kernel resolves inside the root is allowed, as that very path.
              if (kernel !== undefined && isInside(root, kernel) && !(access === 'write' && protectedUnder(root, kernel))) {
                expect({ target, access, result }).toEqual({ target, access, result: kernel });
              }
            }
          }
        } finally {
          rmSync(base, { recursive: true, force: true });
        }
      }),
      // A failure reports its tree and paths as generated: shrinking 500-path arrays on real trees takes minutes.
      { numRuns: TREES, endOnFailure: true },
    );
    expect(checked).toBe(TREES * PATHS_PER_TREE * 2);
  });
});
