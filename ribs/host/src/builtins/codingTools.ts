import type { ProcessSandbox } from '@keelson/platform';
import type { ToolDefinition } from '@keelson/ribs-contract';
import { bashTool } from './bashTool';
import { editTool } from './editTool';
import { globTool } from './globTool';
import { grepTool } from './grepTool';
import { readTool } from './readTool';
import { writeTool } from './writeTool';

/** The host's built-in coding tools, by the names coding agents know them. */
export const BUILTIN_CODING_TOOLS = ['Read', 'Write', 'Edit', 'Glob', 'Grep', 'Bash'] as const;

const builtinNames: ReadonlySet<string> = new Set(BUILTIN_CODING_TOOLS);

/** True for a built-in coding tool's name: offered only when a turn names it, never as ambient. */
export function isBuiltinCodingTool(name: string): boolean {
  return builtinNames.has(name);
}

/**
 * `Read`, `Write`, `Edit`, `Glob`, `Grep` and `Bash`, executed in the host's process through the
 * registry (input parsing, `tool_call` / `tool_result` policies). Each confines its paths to the
 * turn's `allowedDirectories` itself too (realpath-resolved), so a pattern, a walk or a symlink
 * swapped in after the policy ran cannot leave them. `env` is what Bash and Grep start from (only
 * the platform's `sandboxEnv` allowlist of it); `sandbox` is the bubblewrap sandbox Bash runs in.
 */
export function codingTools(opts: { env: Record<string, string | undefined>; sandbox: ProcessSandbox }): ToolDefinition[] {
  return [readTool(), writeTool(), editTool(), globTool(), grepTool(opts), bashTool(opts)] as ToolDefinition[];
}
