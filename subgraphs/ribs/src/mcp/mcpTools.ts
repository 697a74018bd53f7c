import { isBuiltinCodingTool, type RibHost } from '@keelson/host';
import type { RegisteredToolInfo } from '@keelson/ribs-contract';
import { effectiveScopes, type Caller, type Scope } from '@keelson/schema';

/**
 * The scope calling a tool over MCP needs: `write`, as the GraphQL mutations that reach ribs
 * (`ribAction`, `invokeCommand`) need; the state-changing `run_*` tools (`run_cancel`, `run_steer`)
 * `operate`, as `cancelRun` does.
 */
export function toolScope(tool: RegisteredToolInfo): Scope {
  return tool.family === 'run' && tool.state_changing ? 'operate' : 'write';
}

/**
 * The tools MCP serves: every registered tool but the host's built-in coding tools (`Read`,
 * `Bash`, …), which work on a turn's confined working directory and have none over MCP.
 */
export function mcpTools(host: RibHost): RegisteredToolInfo[] {
  return host.tools().filter((t) => !isBuiltinCodingTool(t.name));
}

/** One served tool by name, undefined when MCP does not serve it. */
export function mcpTool(host: RibHost, name: string): RegisteredToolInfo | undefined {
  const tool = host.tool(name);
  return tool && !isBuiltinCodingTool(tool.name) ? tool : undefined;
}

/** Whether `caller` holds the scope `tool` needs (`admin` implies every scope). */
export function mayCall(caller: Caller, tool: RegisteredToolInfo): boolean {
  return effectiveScopes(caller.scopes).includes(toolScope(tool));
}
