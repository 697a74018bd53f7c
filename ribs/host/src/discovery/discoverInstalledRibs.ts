import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { RIB_PACKAGE_PREFIX } from '@keelson/ribs-contract';
import { errorMessage } from '../errors';
import type { WarningSink } from '../warnings';
import { loadWorkflowFiles } from './loadWorkflowFiles';

/** An installed `@keelson/rib-*` package, loaded. */
export interface InstalledRibPackage {
  /** The package suffix: `@keelson/rib-<key>`. */
  key: string;
  packageName: string;
  packageDir: string;
  /** The module's default export (or the module itself when it has none). */
  exported: unknown;
}

/** The `node_modules` folders Node would resolve `@keelson/*` from, nearest first. */
export function defaultNodeModulesRoots(): string[] {
  return [...new Set(require.resolve.paths('@keelson/ribs-contract') ?? [])];
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Finds `@keelson/rib-*` packages under each root's `@keelson/` folder (symlinked workspaces
 * included) and loads them. The nearest root wins for a package name; a farther copy is warned
 * about and skipped. A package whose manifest is unreadable or misnamed, or whose import throws,
 * is warned about and skipped: a shape failure costs that rib and nothing else.
 */
export function discoverInstalledRibs(roots: readonly string[], warn: WarningSink): (InstalledRibPackage & { workflowFiles: ReturnType<typeof loadWorkflowFiles> })[] {
  const found = new Map<string, InstalledRibPackage & { workflowFiles: ReturnType<typeof loadWorkflowFiles> }>();
  // Node resolves a package name from the nearest root only, so the first copy claims the name even if it fails.
  const claimed = new Map<string, string>();
  for (const root of roots) {
    const scope = join(root, '@keelson');
    let entries: string[];
    try {
      entries = readdirSync(scope).filter((name) => name.startsWith('rib-')).sort();
    } catch {
      continue;
    }
    for (const dirName of entries) {
      const key = dirName.slice('rib-'.length);
      const path = join(scope, dirName);
      if (!isDirectory(path)) continue;
      const packageName = `${RIB_PACKAGE_PREFIX}${key}`;
      const packageDir = realpathSync(path);
      const claimedBy = claimed.get(key);
      if (claimedBy !== undefined) {
        if (claimedBy !== packageDir) {
          warn({ stage: 'discovery', rule: 'duplicate-id', ribId: key, message: `${packageName} at ${packageDir} is shadowed by ${claimedBy}; skipped` });
        }
        continue;
      }
      claimed.set(key, packageDir);
      let declaredName: unknown;
      try {
        declaredName = (JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { name?: unknown }).name;
      } catch (err) {
        warn({ stage: 'discovery', rule: 'shape', ribId: key, message: `${packageDir}: unreadable package.json (${errorMessage(err)}); skipped` });
        continue;
      }
      if (declaredName !== packageName) {
        warn({ stage: 'discovery', rule: 'shape', ribId: key, message: `${packageDir}: package.json names ${JSON.stringify(declaredName)}, expected '${packageName}'; skipped` });
        continue;
      }
      let exported: unknown;
      try {
        // A discovered package is loaded by path at run time, which only require() can do synchronously.
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const mod = require(packageDir) as { default?: unknown };
        exported = mod && typeof mod === 'object' && 'default' in mod ? mod.default : mod;
      } catch (err) {
        warn({ stage: 'discovery', rule: 'import', ribId: key, message: `importing ${packageName} threw: ${errorMessage(err)}; skipped` });
        continue;
      }
      found.set(key, { key, packageName, packageDir, exported, workflowFiles: loadWorkflowFiles(packageDir, key, warn) });
    }
  }
  return [...found.values()];
}
