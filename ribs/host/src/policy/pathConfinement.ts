import { realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { Policy, PolicyDecision } from '@keelson/shared';

/** The id of the always-registered confinement builtin. */
export const PATH_CONFINEMENT_POLICY_ID = 'builtin:path_confinement';

/** Argument names that hold file paths. */
const PATH_ARGS = new Set([
  'path', 'paths', 'file', 'files', 'file_path', 'filepath', 'filePath', 'dir', 'directory', 'cwd', 'target',
  'source', 'destination', 'dest', 'src', 'root', 'notebook_path', 'notebookPath', 'output', 'outputPath',
]);
/** Argument names that hold shell command lines. */
const SHELL_ARGS = new Set(['command', 'cmd', 'script']);

/**
 * The canonical form of `p`: `~` expanded, resolved against `cwd`, and realpath-resolved through
 * its deepest existing ancestor (so a symlink cannot smuggle a path out of a root).
 */
export function canonicalPath(p: string, cwd: string): string {
  const expanded = p === '~' ? homedir() : p.startsWith('~/') ? join(homedir(), p.slice(2)) : p;
  let current = resolve(cwd, expanded);
  const rest: string[] = [];
  for (;;) {
    try {
      return join(realpathSync(current), ...rest);
    } catch {
      const parent = dirname(current);
      if (parent === current) return join(current, ...rest);
      rest.unshift(basename(current));
      current = parent;
    }
  }
}

function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

function shellPathTokens(command: string): string[] {
  return command
    .split(/[\s;|&<>()`]+/)
    .map((token) => token.replace(/^['"]|['"]$/g, ''))
    .map((token) => (token.startsWith('-') && token.includes('=') ? token.slice(token.indexOf('=') + 1) : token))
    .filter((token) => token.length > 0 && !token.startsWith('-'))
    .filter((token) => token.startsWith('/') || token.startsWith('~') || token.startsWith('.') || token.includes('/'));
}

function collectPaths(value: unknown, into: string[], depth = 0): void {
  if (depth > 4 || typeof value !== 'object' || value === null) return;
  for (const [key, v] of Object.entries(value)) {
    if (PATH_ARGS.has(key)) {
      if (typeof v === 'string') into.push(v);
      else if (Array.isArray(v)) for (const item of v) if (typeof item === 'string') into.push(item);
    } else if (SHELL_ARGS.has(key) && typeof v === 'string') {
      into.push(...shellPathTokens(v));
    } else {
      collectPaths(v, into, depth + 1);
    }
  }
}

/**
 * Denies a tool call whose file or shell path arguments canonicalize outside the turn's
 * `allowedDirectories`. A turn with none (absent or empty) is unconfined.
 */
export function pathConfinementPolicy(): Policy {
  return {
    id: PATH_CONFINEMENT_POLICY_ID,
    on: [{ phase: 'tool_call' }],
    evaluate(event, ctx): PolicyDecision {
      const roots = ctx.allowedDirectories ?? [];
      if (event.phase !== 'tool_call' || roots.length === 0) return { outcome: 'allow' };
      const cwd = ctx.cwd ?? process.cwd();
      const canonicalRoots = roots.map((root) => canonicalPath(root, cwd));
      const paths: string[] = [];
      collectPaths(event.args, paths);
      for (const p of paths) {
        const canonical = canonicalPath(p, cwd);
        if (!canonicalRoots.some((root) => isInside(root, canonical))) {
          return { outcome: 'deny', reason: `path '${p}' resolves outside the turn's allowed directories` };
        }
      }
      return { outcome: 'allow' };
    },
  };
}
