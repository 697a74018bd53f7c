import type { Rib, ToolDefinition } from '@keelson/ribs-contract';
import { z } from 'zod';

/** What the probe rib's tools were called with, and by whom, in call order. */
export interface ProbeCall {
  tool: string;
  label: string;
  subject?: string;
}

/**
 * A rib for MCP tests: `probe_stamp` records its label (and the caller the tool was handed) and
 * answers `stamped <label>`; `probe_forbidden` would record too, but the rib's policy denies it on
 * the `mcp` surface (and only there); `probe_ask` runs once an operator approves it (the rib's policy
 * asks on the `mcp` surface).
 */
export function mcpProbeRib(calls: ProbeCall[]): Rib {
  const tool = (name: string, description: string): ToolDefinition<{ label: string }> => ({
    name,
    description,
    inputSchema: z.strictObject({ label: z.string().min(1).max(200) }),
    state_changing: true,
    execute(input, ctx) {
      calls.push({ tool: name, label: input.label, ...(ctx.caller ? { subject: ctx.caller.subject } : {}) });
      ctx.emit({ type: 'tool_result', toolUseId: '', content: `stamped ${input.label}` });
    },
  });
  return {
    id: 'probe',
    displayName: 'Probe',
    registerTools: () =>
      [tool('probe_stamp', 'Stamp a label and say so.'), tool('probe_forbidden', 'A tool MCP callers may not use.'), tool('probe_ask', 'A tool an operator approves first.')] as ToolDefinition[],
    contributePolicies: () => [
      {
        id: 'no-forbidden-over-mcp',
        on: [{ phase: 'tool_call', tool: 'probe_forbidden' }],
        evaluate: (_event, ctx) => (ctx.surface === 'mcp' ? { outcome: 'deny', reason: 'not over MCP' } : { outcome: 'allow' }),
      },
      {
        id: 'ask-over-mcp',
        on: [{ phase: 'tool_call', tool: 'probe_ask' }],
        evaluate: (_event, ctx) => (ctx.surface === 'mcp' ? { outcome: 'ask', reason: 'an operator looks first' } : { outcome: 'allow' }),
      },
    ],
  };
}
