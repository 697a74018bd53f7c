import type { IncomingMessage, ServerResponse } from 'node:http';
import { PERMISSION_TOOL, type PermissionGate } from '@keelson/harness';
import type { SubgraphRouteHandler } from '@keelson/kit';
import { isMeshError } from '@keelson/schema';
import { sendJsonRpcError, type Logger } from '@keelson/service';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** Where a turn's CLI asks before a tool runs (the sessions service's own origin; not behind the gateway). */
export const PERMISSIONS_PATH = '/api/harness-permissions';

/** What claude-code sends its `--permission-prompt-tool`. */
const askSchema = z.looseObject({ tool_name: z.string().min(1).max(200), input: z.unknown().optional(), tool_use_id: z.string().min(1).max(200) });

function serverFor(gate: PermissionGate, secret: string, log: Logger): Server {
  const server = new Server({ name: 'keelson-permissions', version: '0.1.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      {
        name: PERMISSION_TOOL,
        description: 'Asks the mesh\'s operator whether a tool may run; waits for the answer.',
        inputSchema: { type: 'object', properties: { tool_name: { type: 'string' }, input: { type: 'object' }, tool_use_id: { type: 'string' } }, required: ['tool_name', 'tool_use_id'] },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (request.params.name !== PERMISSION_TOOL) throw new McpError(ErrorCode.InvalidParams, `no tool named '${request.params.name}' here`);
    const ask = askSchema.safeParse(request.params.arguments ?? {});
    if (!ask.success) throw new McpError(ErrorCode.InvalidParams, `the permission request is malformed: ${ask.error.issues.map((i) => i.message).join('; ')}`);
    const answer = await gate.decide(secret, { toolName: ask.data.tool_name, input: ask.data.input ?? {}, toolUseId: ask.data.tool_use_id }, extra.signal);
    log.info({ tool: ask.data.tool_name, behavior: answer.behavior }, 'a permission hook was answered');
    return { content: [{ type: 'text', text: JSON.stringify(answer) }] };
  });
  return server;
}

/**
 * `POST /api/harness-permissions` of the sessions service: the MCP server (Streamable HTTP, stateless)
 * a turn's CLI calls through its permission hook before a tool runs. The credential is the turn's own
 * secret (`authorization: Bearer <secret>`, minted for the turn and dropped when it settles): no other
 * caller gets in (401). Its one tool opens the approval and answers once `answerApproval` does.
 */
export function permissionEndpoint(opts: { gate: PermissionGate; log: Logger }): SubgraphRouteHandler {
  return async (req: IncomingMessage, res: ServerResponse, request) => {
    const secret = /^Bearer (\S+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    if (!secret || !opts.gate.holds(secret)) return sendJsonRpcError(res, { status: 401, message: 'a permission request needs its running turn\'s secret', code: 'UNAUTHENTICATED' });
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return sendJsonRpcError(res, { status: 405, message: `${req.method ?? 'this method'} is not served: POST JSON-RPC messages`, code: 'BAD_REQUEST' });
    }
    let body: unknown;
    try {
      body = JSON.parse(await request.body());
    } catch (err) {
      const status = (err as { status?: number }).status;
      return sendJsonRpcError(res, { status: status ?? 400, message: status ? (err as Error).message : 'the request body is not JSON', code: 'BAD_REQUEST' });
    }
    const server = serverFor(opts.gate, secret, opts.log);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (err) {
      if (isMeshError(err) && !res.headersSent) return sendJsonRpcError(res, { status: err.status, message: err.message, code: err.code });
      throw err;
    }
  };
}
