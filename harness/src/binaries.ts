import { access, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { findExecutable, isExecutable } from '@keelson/platform';

/** Where a harness's CLI comes from: an npm package pinned by @keelson/harness, else PATH. */
export interface BinarySpec {
  /** The command name on PATH. */
  command: string;
  /** The npm package that ships it and the `bin` entry to run. */
  npm?: { pkg: string; bin: string };
}

export interface LocatedBinary {
  path: string;
  /** The package version when it came from npm. */
  version: string | null;
}

/** `pkg`'s folder as Node resolves it from this package (without going through its `exports`). */
async function packageDir(pkg: string): Promise<string | undefined> {
  for (const base of require.resolve.paths(pkg) ?? []) {
    const dir = join(base, pkg);
    try {
      await access(join(dir, 'package.json'));
      return dir;
    } catch {
      // next
    }
  }
  return undefined;
}

/**
 * The CLI's executable: the pinned npm package's `bin` when installed, else the first executable
 * named `spec.command` on `searchPath`; undefined when neither exists.
 */
export async function locateBinary(spec: BinarySpec, searchPath: string): Promise<LocatedBinary | undefined> {
  if (spec.npm) {
    const dir = await packageDir(spec.npm.pkg);
    if (dir) {
      const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version?: string; bin?: string | Record<string, string> };
      const rel = typeof manifest.bin === 'string' ? manifest.bin : manifest.bin?.[spec.npm.bin];
      if (rel && (await isExecutable(join(dir, rel)))) return { path: join(dir, rel), version: manifest.version ?? null };
    }
  }
  const found = await findExecutable(spec.command, searchPath);
  return found ? { path: found, version: null } : undefined;
}

/** The directory of the running node, so `#!/usr/bin/env node` CLIs find the same node. */
export function nodeBinDir(): string {
  return dirname(process.execPath);
}
