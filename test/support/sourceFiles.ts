import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Folders never walked: dependencies, build output, git's own. */
const SKIPPED = new Set(['node_modules', 'dist', 'coverage', '.git']);

function walk(root: string, rel: string, out: string[]): void {
  for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
    const path = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.isDirectory()) {
      if (!SKIPPED.has(entry.name)) walk(root, path, out);
    } else if (entry.isFile() && entry.name.endsWith('.ts')) out.push(path);
  }
}

/**
 * The repository's shipped TypeScript, read from the filesystem (unit tests start no process): every
 * `.ts` file outside dependencies and build output that is not a test, test support, a benchmark, a
 * declaration or the ClickClack stand-in. Paths relative to `root`, `/`-separated, sorted.
 */
export function shippedSources(root: string): string[] {
  const all: string[] = [];
  walk(root, '', all);
  return all.filter((f) => !/(\.test\.ts|\.d\.ts)$|(^|\/)(test|bench|testing)\//.test(f)).sort();
}
