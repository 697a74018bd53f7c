import { lstat, mkdir, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { fileWritingTool } from './builtinTool';
import { displayPath } from './confine';
import { WRITE_FLAGS } from './textFile';

/** The largest content one Write takes (10 MiB). */
export const WRITE_MAX_CHARS = 10 * 1024 * 1024;

const inputSchema = z.object({
  path: z.string().min(1).describe('The file to write (relative or absolute; relative to the working directory).'),
  content: z.string().max(WRITE_MAX_CHARS).describe('The whole new content of the file.'),
});

/** Writes `content` to the canonical `path` (parents created), never through a symlink swapped in since the check. */
export async function writeConfined(path: string, content: string): Promise<'created' | 'overwrote'> {
  const existed = await lstat(path).then(
    () => true,
    () => false,
  );
  await mkdir(dirname(path), { recursive: true });
  const handle = await open(path, WRITE_FLAGS, 0o644);
  try {
    await handle.writeFile(content, 'utf8');
  } finally {
    await handle.close();
  }
  return existed ? 'overwrote' : 'created';
}

/** `Write`: creates or overwrites a file with `content`, creating missing parent directories; never inside `.git` or `.keelson`. */
export function writeTool() {
  return fileWritingTool({
    name: 'Write',
    description: 'Write a file: create it (with missing parent directories) or overwrite it with content. Prefer Edit to change part of an existing file.',
    inputSchema,
    async run(input, ctx, path) {
      const how = await writeConfined(path, input.content);
      return `${how === 'created' ? 'Created' : 'Overwrote'} ${displayPath(ctx.cwd, path)} (${Buffer.byteLength(input.content)} bytes)`;
    },
  });
}
