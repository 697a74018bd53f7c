import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { fileWritingTool } from './builtinTool';
import { displayPath } from './confine';
import { openForWrite } from './textFile';

/** The largest content one Write takes (10 MiB). */
export const WRITE_MAX_CHARS = 10 * 1024 * 1024;

const inputSchema = z.object({
  path: z.string().min(1).describe('The file to write (relative or absolute; relative to the working directory).'),
  content: z.string().max(WRITE_MAX_CHARS).describe('The whole new content of the file.'),
});

/** Writes `content` to the canonical `path` (parents created), never through a symlink swapped in since the check (see `openForWrite`). */
export async function writeConfined(path: string, content: string): Promise<'created' | 'overwrote'> {
  await mkdir(dirname(path), { recursive: true });
  const { handle, created } = await openForWrite(path);
  try {
    await handle.writeFile(content, 'utf8');
  } finally {
    await handle.close();
  }
  return created ? 'created' : 'overwrote';
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
