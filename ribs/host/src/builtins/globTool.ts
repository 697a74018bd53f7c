import { lstat, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { builtinTool } from './builtinTool';
import { confinedToolPath, displayPath } from './confine';
import { globToRegExp, splitGlob } from './globPattern';
import { walkFiles } from './walkFiles';

/** Paths one Glob lists. */
export const GLOB_MAX_RESULTS = 250;
/** Matches whose modification time is read to order them (beyond it, walk order). */
const GLOB_SORT_LIMIT = 5000;

const inputSchema = z.object({
  pattern: z.string().min(1).describe('A glob such as **/*.ts or src/**/*.{ts,tsx}; relative to path.'),
  path: z.string().min(1).optional().describe('The directory to search (relative or absolute). @default the working directory'),
});

/** Directory names a walk skips unless the pattern names them. */
export function skippedDirs(pattern: string): Set<string> {
  return new Set(['.git', 'node_modules'].filter((name) => !pattern.split('/').includes(name)));
}

/**
 * `Glob`: files under `path` whose relative path matches `pattern`, most recently modified first,
 * at most 250. `.git` and `node_modules` are skipped unless the pattern names them; symlinks are
 * listed, never followed. A pattern's literal leading directories join `path` and are confined too.
 */
export function globTool() {
  return builtinTool({
    name: 'Glob',
    description:
      `Find files by name pattern (glob: **, *, ?, [abc], {a,b}), most recently modified first, at most ${GLOB_MAX_RESULTS}. ` +
      '.git and node_modules are skipped unless named. Only directories inside the allowed directories.',
    inputSchema,
    async run(input, ctx) {
      const { base, rest } = splitGlob(input.pattern);
      if (rest.split('/').includes('..')) return { content: `pattern '${input.pattern}': '..' may only lead the pattern, before any wildcard`, isError: true };
      const dir = confinedToolPath(ctx, base ? (input.path ? join(input.path, base) : base) : (input.path ?? '.'));
      const info = await stat(dir);
      if (!info.isDirectory()) return { content: `${displayPath(ctx.cwd, dir)} is not a directory`, isError: true };
      const matcher = globToRegExp(rest);
      const walked = await walkFiles(dir, { skipDirs: skippedDirs(rest), signal: ctx.abortSignal });
      const matched = walked.files.filter((f) => matcher.test(f));
      if (matched.length === 0) return `No files match ${input.pattern}${walked.complete ? '' : ' (the walk stopped early: the directory is too large; narrow path)'}`;
      let ordered = matched;
      if (matched.length <= GLOB_SORT_LIMIT) {
        const times = await Promise.all(matched.map((f) => lstat(join(dir, f)).then((s) => s.mtimeMs, () => 0)));
        ordered = matched.map((f, i) => ({ f, t: times[i]! })).sort((a, b) => b.t - a.t || (a.f < b.f ? -1 : 1)).map((m) => m.f);
      }
      const lines = ordered.slice(0, GLOB_MAX_RESULTS).map((f) => displayPath(ctx.cwd, join(dir, f)));
      if (ordered.length > GLOB_MAX_RESULTS) lines.push(`[${ordered.length - GLOB_MAX_RESULTS} more not shown; narrow the pattern]`);
      if (!walked.complete) lines.push('[the walk stopped early: the directory is too large; narrow path]');
      return lines.join('\n');
    },
  });
}
