import type { ToolContext, ToolDefinition } from '@keelson/ribs-contract';
import type { z } from 'zod';
import { confinedToolPath, ToolRefusal } from './confine';

/** What a built-in answers: its text, flagged as an error when the call failed. */
export type BuiltinReply = string | { content: string; isError: boolean };

/** A built-in coding tool as written: a function from input to reply; refusals and fs errors become error results. */
export interface BuiltinSpec<I> {
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  state_changing?: boolean;
  run(input: I, ctx: ToolContext): Promise<BuiltinReply>;
}

const FS_ERRORS: Record<string, string> = {
  ENOENT: 'no such file or directory',
  EISDIR: 'is a directory',
  ENOTDIR: 'a component of the path is not a directory',
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ELOOP: 'is a symbolic link (refused: it changed since it was checked)',
  EEXIST: 'already exists',
};

/** An error as the model reads it: fs errors by their meaning and path, refusals as they are. */
export function describeError(err: unknown, shownPath?: string): string {
  if (err instanceof ToolRefusal) return err.message;
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code && FS_ERRORS[code]) return shownPath ? `${shownPath}: ${FS_ERRORS[code]}` : FS_ERRORS[code];
  return err instanceof Error ? err.message : String(err);
}

/** Wraps a spec as a registry `ToolDefinition`: one `tool_result` per call, never a throw. */
export function builtinTool<I>(spec: BuiltinSpec<I>): ToolDefinition<I> {
  return {
    name: spec.name,
    description: spec.description,
    inputSchema: spec.inputSchema,
    ...(spec.state_changing ? { state_changing: true } : {}),
    async execute(input, ctx) {
      let reply: BuiltinReply;
      try {
        reply = await spec.run(input, ctx);
      } catch (err) {
        reply = { content: describeError(err, (input as { path?: string }).path), isError: true };
      }
      if (ctx.abortSignal.aborted) return;
      const { content, isError } = typeof reply === 'string' ? { content: reply, isError: false } : reply;
      ctx.emit({ type: 'tool_result', toolUseId: '', content, ...(isError ? { isError: true } : {}) });
    },
  };
}

/**
 * A built-in that writes one file (`input.path`): state-changing, its description ending with where it
 * may write, and `run` given the path confined for writing.
 */
export function fileWritingTool<I extends { path: string }>(spec: {
  name: string;
  description: string;
  inputSchema: z.ZodType<I>;
  run(input: I, ctx: ToolContext, path: string): Promise<BuiltinReply>;
}): ToolDefinition<I> {
  return builtinTool({
    name: spec.name,
    description: `${spec.description} Only paths inside the allowed directories, never inside .git or .keelson.`,
    inputSchema: spec.inputSchema,
    state_changing: true,
    run: (input, ctx) => spec.run(input, ctx, confinedToolPath(ctx, input.path, 'write')),
  });
}
