import { lstatSync, readdirSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { canonicalPath, checkPath } from '@keelson/platform';
import type { Policy, PolicyDecision } from '@keelson/ribs-contract';
import { globToRegExp, isMagic } from '../builtins/globPattern';

/** The id of the always-registered confinement builtin. */
export const PATH_CONFINEMENT_POLICY_ID = 'builtin:path_confinement';

/** Argument names that hold file paths. */
const PATH_ARGS = new Set([
  'path', 'paths', 'file', 'files', 'file_path', 'filepath', 'filePath', 'dir', 'directory', 'cwd', 'target',
  'source', 'destination', 'dest', 'src', 'root', 'notebook_path', 'notebookPath', 'output', 'outputPath',
]);
/** Argument names that hold shell command lines. */
const SHELL_ARGS = new Set(['command', 'cmd', 'script']);
/** Device files a shell command may name wherever the roots are (`2>/dev/null`). */
const SHELL_DEVICES = /^\/dev\/(null|zero|random|urandom|stdin|stdout|stderr|tty|fd\/\d+)$/;

/** `$HOME` / `$PWD` / `$TMPDIR` (bare or braced) at the start of a word, expanded as the shell would. */
function expandKnownVariables(token: string, cwd: string): string {
  return token.replace(/^\$(?:\{(HOME|PWD|TMPDIR)\}|(HOME|PWD|TMPDIR)\b)/, (_all, braced?: string, bare?: string) => {
    const name = braced ?? bare;
    return name === 'HOME' ? homedir() : name === 'PWD' ? cwd : tmpdir();
  });
}

/** Paths one wildcard word of a command may expand to before the policy gives up checking them. */
const MAX_GLOB_MATCHES = 256;

/** A command the policy cannot check: it denies it with this reason. */
class Unchecked extends Error {}

function isSymlink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Every path a wildcard word can expand to now (segment by segment, as the shell globs), or the word itself when nothing matches. */
function expandWildcards(word: string, cwd: string): string[] {
  let candidates = [word.startsWith('/') ? '' : cwd];
  for (const segment of word.split('/')) {
    if (segment === '' || !isMagic(segment)) {
      candidates = candidates.map((c) => (segment === '' ? c : `${c}${sep}${segment}`));
      continue;
    }
    const matcher = globToRegExp(segment);
    const next: string[] = [];
    for (const dir of candidates) {
      let names: string[];
      try {
        names = readdirSync(dir || sep);
      } catch {
        continue;
      }
      for (const name of names) if (matcher.test(name)) next.push(`${dir}${sep}${name}`);
      if (next.length > MAX_GLOB_MATCHES) throw new Unchecked(`'${word}' matches more than ${MAX_GLOB_MATCHES} paths; name the files instead`);
    }
    candidates = next;
  }
  return candidates.length > 0 ? candidates : [word];
}

/**
 * The paths a command line names, for confinement: split on whitespace, quotes, operators,
 * redirections, subshells, `=`, `,` and braces (options' values kept); `~`, `~user`, `$HOME`, `$PWD`
 * and `$TMPDIR` expanded. A word counts when it starts with `/`, `~` or `.`, holds a `/`, or names a
 * symlink in the cwd; a word with wildcards counts as every path it matches now. Device files
 * (`/dev/null`…) are left out. Other variables, substitutions and what programs open are not seen
 * (see the host README). Throws `Unchecked` for a wildcard matching too much to check.
 */
export function shellPathTokens(command: string, cwd: string): string[] {
  return command
    .split(/[\s;|&<>()`'"=,{}]+/)
    .filter((token) => token.length > 0 && !token.startsWith('-'))
    .map((token) => expandKnownVariables(token, cwd))
    .map((token) => (token === '~' || token.startsWith('~/') ? canonicalPath(token, cwd) : token))
    .map((token) => (token.startsWith('~') ? join(dirname(homedir()), token.slice(1)) : token))
    .flatMap((token) => (isMagic(token) ? expandWildcards(token, cwd) : [token]))
    .filter((token) => token.startsWith('/') || token.startsWith('.') || token.includes('/') || isSymlink(`${cwd}${sep}${token}`))
    .filter((token) => !SHELL_DEVICES.test(token));
}

function collectPaths(value: unknown, cwd: string, into: string[], depth = 0): void {
  if (depth > 4 || typeof value !== 'object' || value === null) return;
  for (const [key, v] of Object.entries(value)) {
    if (PATH_ARGS.has(key)) {
      if (typeof v === 'string') into.push(v);
      else if (Array.isArray(v)) for (const item of v) if (typeof item === 'string') into.push(item);
    } else if (SHELL_ARGS.has(key) && typeof v === 'string') {
      into.push(...shellPathTokens(v, cwd));
    } else {
      collectPaths(v, cwd, into, depth + 1);
    }
  }
}

/**
 * Denies a tool call whose file or shell path arguments canonicalize outside the turn's
 * `allowedDirectories` (the platform's `confinePath`; a symlink loop is denied too). A turn with
 * none (absent or empty) is unconfined. Which arguments are writes is the tools' to know: they
 * refuse writes into `.git` / `.keelson` themselves, and Bash's sandbox mounts those read-only.
 */
export function pathConfinementPolicy(): Policy {
  return {
    id: PATH_CONFINEMENT_POLICY_ID,
    on: [{ phase: 'tool_call' }],
    evaluate(event, ctx): PolicyDecision {
      const roots = ctx.allowedDirectories ?? [];
      if (event.phase !== 'tool_call' || roots.length === 0) return { outcome: 'allow' };
      const cwd = ctx.cwd ?? process.cwd();
      const paths: string[] = [];
      try {
        collectPaths(event.args, cwd, paths);
      } catch (err) {
        if (err instanceof Unchecked) return { outcome: 'deny', reason: err.message };
        throw err;
      }
      for (const p of paths) {
        const checked = checkPath(p, { roots, cwd, scope: "the turn's allowed directories" });
        if (!checked.ok) return { outcome: 'deny', reason: checked.error.message };
      }
      return { outcome: 'allow' };
    },
  };
}
