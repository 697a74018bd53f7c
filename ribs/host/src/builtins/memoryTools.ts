import type { MemoryTools, ToolDefinition } from '@keelson/ribs-contract';
import type { z } from 'zod';
import { errorMessage } from '../errors';
import { memoryRecallSchema, memoryWritebackSchema } from '../memory/graphqlMemoryTools';

/** The names of the host's memory tools (a prompt node's `allowed_tools` may name them). */
export const MEMORY_RECALL_TOOL = 'memory_recall';
export const MEMORY_WRITE_TOOL = 'memory_write';

/** Whose memory a call reads and writes when no rib is calling (a project workflow's prompt node). */
export const WORKFLOW_MEMORY_OWNER = 'workflows';

/**
 * `memory_recall` and `memory_write`: seed 000's MemoryTools as tools, the same `recall`/`writeback`
 * a rib's `getMemory()` returns — for the calling rib (a rib workflow's prompt node), else the
 * workflows' own memory. Writes are evidence unless a kind is given, never instruction-grade.
 */
export function memoryTools(memoryFor: (ribId: string) => MemoryTools): ToolDefinition[] {
  const recall: ToolDefinition<z.infer<typeof memoryRecallSchema>> = {
    name: MEMORY_RECALL_TOOL,
    description: 'Search what was remembered before (decisions, lessons, work logs, evidence). {query, limit?, scope?: {projectId?, visibility?}}; returns the matching records, best first.',
    inputSchema: memoryRecallSchema,
    async execute(input, ctx) {
      try {
        const records = await memoryFor(ctx.callerRibId ?? WORKFLOW_MEMORY_OWNER).recall(input);
        const lines = records.map((r) => `- [${r.kind}] ${r.text}`);
        ctx.emit({ type: 'tool_result', toolUseId: '', content: lines.length ? lines.join('\n') : 'Nothing remembered matches.' });
      } catch (err) {
        ctx.emit({ type: 'tool_result', toolUseId: '', content: `memory_recall failed: ${errorMessage(err)}`, isError: true });
      }
    },
  };
  const write: ToolDefinition<z.infer<typeof memoryWritebackSchema>> = {
    name: MEMORY_WRITE_TOOL,
    description: 'Remember something for later turns and runs. {text, kind?: decision|lesson|work-log|evidence (default evidence), scope?}; returns the record id.',
    inputSchema: memoryWritebackSchema,
    state_changing: true,
    async execute(input, ctx) {
      try {
        const { id } = await memoryFor(ctx.callerRibId ?? WORKFLOW_MEMORY_OWNER).writeback(input);
        ctx.emit({ type: 'tool_result', toolUseId: '', content: `remembered (${id})` });
      } catch (err) {
        ctx.emit({ type: 'tool_result', toolUseId: '', content: `memory_write failed: ${errorMessage(err)}`, isError: true });
      }
    },
  };
  return [recall, write] as ToolDefinition[];
}
