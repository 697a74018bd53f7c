import { toolFamily, toolNameSchema, type RegisteredToolInfo, type ToolDefinition } from '@keelson/ribs-contract';

/** A tool in the shared registry with its owner (undefined for the host's own tools). */
export interface RegisteredTool {
  definition: ToolDefinition;
  ownerRibId?: string;
  family: string;
}

/** Why a tool was not registered. */
export type ToolRejection = { rule: 'tool-shape'; message: string } | { rule: 'tool-collision'; message: string };

/** The problem with a tool definition's shape, or undefined when it is well-formed. */
export function toolShapeProblem(tool: unknown): string | undefined {
  if (typeof tool !== 'object' || tool === null) return 'a tool is an object';
  const t = tool as Partial<ToolDefinition>;
  const name = toolNameSchema.safeParse(t.name);
  if (!name.success) return `tool name ${JSON.stringify(t.name)}: ${name.error.issues[0]?.message}`;
  if (typeof t.description !== 'string' || t.description.length === 0) return `tool '${t.name}' has no description`;
  if (typeof (t.inputSchema as { safeParse?: unknown } | undefined)?.safeParse !== 'function') return `tool '${t.name}' has no zod inputSchema`;
  if (typeof t.execute !== 'function') return `tool '${t.name}' has no execute function`;
  return undefined;
}

/**
 * The one registry every rib's tools join. Names are global: the first claim wins, and a later
 * claim of the same name (by any rib) is rejected so the caller can skip it with a warning.
 */
export class ToolRegistry {
  private readonly tools = new Map<string, RegisteredTool>();

  /** Registers `tool` for `ownerRibId` (undefined for a host tool), or says why not. */
  register(tool: ToolDefinition, ownerRibId?: string): ToolRejection | undefined {
    const problem = toolShapeProblem(tool);
    if (problem) return { rule: 'tool-shape', message: problem };
    const claimed = this.tools.get(tool.name);
    if (claimed) {
      const holder = claimed.ownerRibId ? `rib '${claimed.ownerRibId}'` : 'the host';
      return { rule: 'tool-collision', message: `tool '${tool.name}' is already registered by ${holder}; skipped` };
    }
    this.tools.set(tool.name, { definition: tool, ownerRibId, family: toolFamily(tool.name) });
    return undefined;
  }

  get(name: string): RegisteredTool | undefined {
    return this.tools.get(name);
  }

  /** Every tool, in registration order. */
  list(): RegisteredToolInfo[] {
    return [...this.tools.values()].map(info);
  }

  /** The tools one rib owns. */
  ownedBy(ribId: string): RegisteredToolInfo[] {
    return [...this.tools.values()].filter((t) => t.ownerRibId === ribId).map(info);
  }
}

function info(t: RegisteredTool): RegisteredToolInfo {
  return {
    name: t.definition.name,
    description: t.definition.description,
    family: t.family,
    ...(t.ownerRibId ? { ownerRibId: t.ownerRibId } : {}),
    state_changing: t.definition.state_changing === true,
    requires_confirmation: t.definition.requires_confirmation === true,
  };
}
