import { z } from 'zod';
import { fileWritingTool } from './builtinTool';
import { displayPath } from './confine';
import { looksBinary, openForRead } from './textFile';
import { writeConfined, WRITE_MAX_CHARS } from './writeTool';

const inputSchema = z.object({
  path: z.string().min(1).describe('The file to edit (relative or absolute; relative to the working directory).'),
  old_string: z.string().min(1).describe('The exact text to replace, whitespace included; it must occur exactly once unless replace_all.'),
  new_string: z.string().describe('The text to put in its place.'),
  replace_all: z.boolean().optional().describe('Replace every occurrence. @default false'),
});

/** Start offsets of the non-overlapping occurrences of `needle`. */
function occurrences(haystack: string, needle: string): number[] {
  const at: number[] = [];
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) at.push(i);
  return at;
}

/**
 * `Edit`: replaces an exact string in a text file. The string must occur exactly once (else the
 * call fails saying how often it occurs) unless `replace_all`; a string not found fails too. Files in
 * `.git` and `.keelson` are refused (read them with Read).
 */
export function editTool() {
  return fileWritingTool({
    name: 'Edit',
    description:
      'Replace text in an existing file: old_string (exact, whitespace included) becomes new_string. old_string must occur exactly once ' +
      '(include surrounding lines to make it unique) unless replace_all is true. Read the file first.',
    inputSchema,
    async run(input, ctx, path) {
      const shown = displayPath(ctx.cwd, path);
      if (input.old_string === input.new_string) return { content: 'old_string and new_string are the same; nothing to change', isError: true };
      const handle = await openForRead(path);
      let text: string;
      try {
        const stat = await handle.stat();
        if (!stat.isFile()) return { content: `${shown} is not a regular file`, isError: true };
        if (stat.size > WRITE_MAX_CHARS) return { content: `${shown} is too large to edit (${stat.size} bytes; at most ${WRITE_MAX_CHARS})`, isError: true };
        if (await looksBinary(handle)) return { content: `${shown} is a binary file; not edited`, isError: true };
        text = await handle.readFile('utf8');
      } finally {
        await handle.close();
      }
      const at = occurrences(text, input.old_string);
      if (at.length === 0) return { content: `old_string was not found in ${shown} (the match is exact, whitespace and indentation included)`, isError: true };
      if (at.length > 1 && !input.replace_all) {
        return {
          content: `old_string occurs ${at.length} times in ${shown}; include more surrounding context to make it unique, or set replace_all`,
          isError: true,
        };
      }
      const edited = input.replace_all
        ? text.split(input.old_string).join(input.new_string)
        : text.slice(0, at[0]) + input.new_string + text.slice(at[0]! + input.old_string.length);
      await writeConfined(path, edited);
      const line = text.slice(0, at[0]).split('\n').length;
      const count = input.replace_all ? at.length : 1;
      return `Edited ${shown}: replaced ${count} occurrence${count === 1 ? '' : 's'} (first at line ${line})`;
    },
  });
}
