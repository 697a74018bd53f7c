import { stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { gitInvocation } from '@keelson/platform';
import { z } from 'zod';
import { builtinTool } from './builtinTool';
import { confinedToolPath, displayPath, isAllowed } from './confine';
import { runCapped } from './cappedProcess';
import { commandEnv } from './commandEnv';

/** Result lines one Grep returns. */
export const GREP_MAX_RESULTS = 250;
/** Characters kept of one matching line. */
const GREP_MAX_LINE_CHARS = 500;
/** Bytes of git grep output read before it is stopped. */
const GREP_MAX_BYTES = 256 * 1024;
/** @default a search's bound */
export const GREP_TIMEOUT_MS = 30_000;

const inputSchema = z.object({
  pattern: z.string().min(1).describe('A regular expression (Perl syntax where git supports it, else POSIX extended).'),
  path: z.string().min(1).optional().describe('The file or directory to search (relative or absolute). @default the working directory'),
  glob: z.string().min(1).optional().describe('Only files matching this glob, e.g. *.ts or src/**/*.{ts,tsx} (a name without / matches at any depth).'),
  ignore_case: z.boolean().optional().describe('Match case-insensitively. @default false'),
  output_mode: z
    .enum(['content', 'files_with_matches', 'count'])
    .optional()
    .describe('content: path:line:text per matching line; files_with_matches: matching paths; count: path:matches. @default content'),
});

/** `{a,b}` alternatives expanded (git pathspecs have none). */
export function expandBraces(glob: string): string[] {
  const open = glob.indexOf('{');
  if (open === -1) return [glob];
  let depth = 0;
  for (let i = open; i < glob.length; i++) {
    if (glob[i] === '{') depth++;
    else if (glob[i] === '}' && --depth === 0) {
      const parts: string[] = [];
      let level = 0;
      let start = open + 1;
      for (let j = open + 1; j < i; j++) {
        if (glob[j] === '{') level++;
        else if (glob[j] === '}') level--;
        else if (glob[j] === ',' && level === 0) {
          parts.push(glob.slice(start, j));
          start = j + 1;
        }
      }
      parts.push(glob.slice(start, i));
      return parts.flatMap((p) => expandBraces(glob.slice(0, open) + p + glob.slice(i + 1)));
    }
  }
  return [glob];
}

/** A Grep glob as git pathspecs: glob magic, a name without `/` at any depth. */
export function globPathspecs(glob: string): string[] {
  return expandBraces(glob).map((g) => `:(glob)${g.includes('/') ? g : `**/${g}`}`);
}

/** `-P` until this git turns out to be built without PCRE, then `-E`. */
let regexFlag: '-P' | '-E' = '-P';

/**
 * `Grep`: `git grep --no-index` over `path` (honouring .gitignore, skipping binary files and
 * symlinks), at most 250 result lines, each cut at 500 characters. git runs in its own process
 * group, bounded by 30 s and the turn's abort; results outside the allowed directories are dropped.
 */
export function grepTool(opts: { env: Record<string, string | undefined> }) {
  const env = commandEnv(opts.env);
  return builtinTool({
    name: 'Grep',
    description:
      `Search file contents with a regular expression (git grep: respects .gitignore, skips binary files). Returns path:line:text per match ` +
      `(or paths, or counts: output_mode), at most ${GREP_MAX_RESULTS}. Narrow with path and glob. Only paths inside the allowed directories.`,
    inputSchema,
    async run(input, ctx) {
      const target = confinedToolPath(ctx, input.path ?? '.');
      const info = await stat(target);
      if (input.glob !== undefined && (input.glob.startsWith('/') || input.glob.split('/').includes('..'))) {
        return { content: `glob '${input.glob}' must be relative to path, without '..'`, isError: true };
      }
      const cwd = info.isDirectory() ? target : dirname(target);
      const pathspecs = info.isDirectory() ? (input.glob ? globPathspecs(input.glob) : []) : [`:(literal)${basename(target)}`];
      const mode = input.output_mode ?? 'content';
      // Hardened like every mesh git call: the searched folder's repository config runs nothing.
      const search = async (flag: '-P' | '-E') => {
        const git = await gitInvocation(
          [
            'grep', '--no-index', '--exclude-standard', '--no-color', '-I', '-z',
            ...(mode === 'files_with_matches' ? ['-l'] : mode === 'count' ? ['-c'] : ['-n']),
            ...(input.ignore_case ? ['-i'] : []),
            flag, '-e', input.pattern, '--', ...pathspecs,
          ],
          { cwd, env, keepLocale: true },
        );
        return runCapped({
          argv: ['git', ...git.args],
          cwd,
          env: git.env,
          timeoutMs: GREP_TIMEOUT_MS,
          signal: ctx.abortSignal,
          maxBytes: GREP_MAX_BYTES,
          keep: 'head',
          mergeStderr: false,
        });
      };
      let r = await search(regexFlag);
      if (regexFlag === '-P' && r.exitCode === 128 && /perl|pcre/i.test(r.stderr) && /compiled|support/i.test(r.stderr)) {
        regexFlag = '-E';
        r = await search(regexFlag);
      }
      if (r.spawnError) return { content: `git could not start: ${r.spawnError}`, isError: true };
      if (r.timedOut) return { content: `the search timed out after ${GREP_TIMEOUT_MS} ms; narrow path or glob`, isError: true };
      if (r.aborted) return { content: 'the search was aborted', isError: true };
      if (!r.full && r.exitCode === 1) return 'No matches';
      if (!r.full && r.exitCode !== 0) return { content: `git grep failed: ${r.stderr.trim() || `exit code ${r.exitCode}`}`, isError: true };

      const records = mode === 'files_with_matches' ? r.output.split('\0') : r.output.split('\n');
      if (r.full) records.pop(); // the last record may be cut
      const lines: string[] = [];
      let more = r.full;
      for (const record of records) {
        if (record === '') continue;
        const [file, ...fields] = record.split('\0');
        const abs = join(cwd, file!);
        if (!isAllowed(ctx, abs)) continue;
        if (lines.length >= GREP_MAX_RESULTS) {
          more = true;
          break;
        }
        const shown = displayPath(ctx.cwd, abs);
        if (mode === 'content') {
          const text = fields.slice(1).join('\0');
          lines.push(`${shown}:${fields[0]}:${text.length > GREP_MAX_LINE_CHARS ? `${text.slice(0, GREP_MAX_LINE_CHARS)} … [line cut]` : text}`);
        } else if (mode === 'count') lines.push(`${shown}:${fields[0]}`);
        else lines.push(shown);
      }
      if (lines.length === 0) return 'No matches';
      if (more) lines.push(`[more results not shown; narrow the pattern, path or glob]`);
      return lines.join('\n');
    },
  });
}
