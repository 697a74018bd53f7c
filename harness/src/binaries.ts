import { constants as fsConstants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';

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

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
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
  for (const d of searchPath.split(delimiter).filter(Boolean)) {
    const candidate = join(d, spec.command);
    if (await isExecutable(candidate)) return { path: candidate, version: null };
  }
  return undefined;
}

/** The directory of the running node, so `#!/usr/bin/env node` CLIs find the same node. */
export function nodeBinDir(): string {
  return dirname(process.execPath);
}
