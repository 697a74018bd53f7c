import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RibHost, ToolRunOutcome } from '@keelson/host';
import type { SubgraphRouteHandler } from '@keelson/kit';
import { isMeshError, type Caller } from '@keelson/schema';
import { sendJsonRpcError, type Logger } from '@keelson/service';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { mayCall, mcpTool, mcpTools, toolScope } from './mcpTools';

/** What the MCP server reports as its name. */
export const MCP_SERVER_NAME = 'keelson-mesh';

export interface McpEndpointOptions {
  host: RibHost;
  log: Logger;
  /** Bounds one tool call, a policy's approval wait included. @default the host's cross-rib call timeout */
  callTimeoutMs?: number;
}

/** A tool's MCP listing: its name, description and input as JSON Schema. */
function listing(host: RibHost, name: string, description: string): Tool {
  const schema = host.toolInputSchema(name) ?? { type: 'object' };
  return { name, description, inputSchema: { ...schema, type: 'object' } as Tool['inputSchema'] };
}

/** A settled tool run as MCP's result: its text, `isError` for every outcome but `ok`. */
function asResult(outcome: ToolRunOutcome): CallToolResult {
  return { content: [{ type: 'text', text: outcome.content }], ...(outcome.isError ? { isError: true } : {}) };
}

/**
 * One MCP server for one request's caller: `tools/list` lists the tools the caller's scopes may
 * call; `tools/call` runs one through the host (its input schema, the `mcp` policy surface, the
 * caller handed to the tool). A policy's deny, a tool's failure, a missing scope are `isError`
 * results; a tool MCP does not serve is an invalid-params error.
 */
export function mcpServerFor(caller: Caller, opts: McpEndpointOptions): Server {
  const { host } = opts;
  const server = new Server({ name: MCP_SERVER_NAME, version: '0.1.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: mcpTools(host)
      .filter((t) => mayCall(caller, t))
      .map((t) => listing(host, t.name, t.description)),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const tool = mcpTool(host, name);
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `no tool named '${name}' is served over MCP`);
    if (!mayCall(caller, tool)) {
      return { content: [{ type: 'text', text: `${name} needs scope ${toolScope(tool)}; the caller (${caller.subject}) has ${caller.scopes.join(', ') || 'none'}` }], isError: true };
    }
    const outcome = await host.executeTool({
      name,
      input: args ?? {},
      surface: 'mcp',
      caller,
      signal: extra.signal,
      timeoutMs: opts.callTimeoutMs ?? host.grants.callTimeoutMs,
    });
    if (outcome.status === 'policy-denied') opts.log.info({ tool: name, policyId: outcome.policyId, subject: caller.subject }, 'mcp tool call denied by policy');
    return asResult(outcome);
  });
  return server;
}

/**
 * `/mcp` of the ribs subgraph, behind the gateway's `/mcp`: Streamable HTTP in stateless mode (a
 * server and transport per request, JSON answers), so any replica answers any request. The caller
 * is the gateway's signed assertion; without a valid one, 401. GET and DELETE (a stream or session
 * of a stateful server) are 405.
 */
export function mcpEndpoint(opts: McpEndpointOptions): SubgraphRouteHandler {
  return async (req: IncomingMessage, res: ServerResponse, request) => {
    let caller: Caller;
    try {
      caller = await request.caller();
    } catch (err) {
      if (isMeshError(err)) return sendJsonRpcError(res, { status: err.status, message: err.message, code: err.code });
      throw err;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return sendJsonRpcError(res, { status: 405, message: `${req.method ?? 'this method'} is not served: this MCP server is stateless; POST JSON-RPC messages`, code: 'BAD_REQUEST' });
    }
    let body: unknown;
    try {
      body = JSON.parse(await request.body());
    } catch (err) {
      const status = (err as { status?: number }).status;
      if (status) return sendJsonRpcError(res, { status, message: (err as Error).message, code: 'BAD_REQUEST' });
      return sendJsonRpcError(res, { status: 400, message: 'the request body is not JSON', code: 'BAD_REQUEST', rpcCode: -32700 });
    }
    const server = mcpServerFor(caller, opts);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };
}
