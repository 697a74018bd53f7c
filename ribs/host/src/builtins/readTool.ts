import { z } from 'zod';
import { builtinTool } from './builtinTool';
import { confinedToolPath, displayPath } from './confine';
import { looksBinary, openForRead, readLines } from './textFile';

/** @default lines one Read returns */
export const READ_DEFAULT_LIMIT = 2000;
/** Characters kept of one line. */
export const READ_MAX_LINE_CHARS = 2000;
/** Characters one Read returns in all (the rest: page with `offset`). */
export const READ_MAX_CHARS = 100_000;

const inputSchema = z.object({
  path: z.string().min(1).describe('The file to read (relative or absolute; relative to the working directory).'),
  offset: z.number().int().min(1).optional().describe('The first line to read (1-based). @default 1'),
  limit: z.number().int().min(1).max(READ_DEFAULT_LIMIT).optional().describe(`How many lines to read. @default ${READ_DEFAULT_LIMIT}`),
});

/**
 * `Read`: a text file's lines, numbered like `cat -n`, from `offset` for `limit` lines; a line is cut
 * at 2,000 characters and the whole answer at 100,000, with a note saying where to continue. Binary
 * files and directories are refused.
 */
export function readTool() {
  return builtinTool({
    name: 'Read',
    description:
      `Read a text file. Returns numbered lines (line number, tab, text). Reads up to ${READ_DEFAULT_LIMIT} lines from offset (1-based); ` +
      'long lines are cut. Page through large files with offset and limit. Only paths inside the allowed directories.',
    inputSchema,
    async run(input, ctx) {
      const path = confinedToolPath(ctx, input.path);
      const shown = displayPath(ctx.cwd, path);
      const handle = await openForRead(path);
      try {
        const stat = await handle.stat();
        if (stat.isDirectory()) return { content: `${shown} is a directory; list it with Glob`, isError: true };
        if (!stat.isFile()) return { content: `${shown} is not a regular file`, isError: true };
        if (stat.size === 0) return `${shown} is empty`;
        if (await looksBinary(handle)) return { content: `${shown} is a binary file (${stat.size} bytes); not shown`, isError: true };
        const from = input.offset ?? 1;
        const limit = input.limit ?? READ_DEFAULT_LIMIT;
        const out: string[] = [];
        let chars = 0;
        let last = from - 1;
        let capped = false;
        let more = false;
        const { lines } = await readLines(
          handle,
          from,
          READ_MAX_LINE_CHARS,
          (line) => {
            if (line.number >= from + limit) {
              more = true;
              return false;
            }
            const row = `${String(line.number).padStart(6)}\t${line.text}${line.cut ? ' … [line cut]' : ''}`;
            if (chars + row.length + 1 > READ_MAX_CHARS && out.length > 0) {
              capped = true;
              return false;
            }
            out.push(row);
            chars += row.length + 1;
            last = line.number;
            return true;
          },
          ctx.abortSignal,
        );
        if (out.length === 0) return { content: `${shown} has only ${lines} lines; offset ${from} is past its end`, isError: true };
        if (capped) out.push(`[output capped at ${READ_MAX_CHARS} characters; continue with offset=${last + 1}]`);
        else if (more) out.push(`[more lines follow; continue with offset=${last + 1}]`);
        return out.join('\n');
      } finally {
        await handle.close();
      }
    },
  });
}
