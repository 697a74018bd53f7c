import type { IncomingMessage, ServerResponse } from 'node:http';
import { ASSERTION_HEADER, effectiveScopes, MCP_PATH, satisfiesScopes, type Caller, type Scope } from '@keelson/schema';
import { countRefusal, sendJsonRpcError, type EndpointHandler } from '@keelson/service';
import { z } from 'zod';
import { endpointCaller, type EndpointProxyOptions } from './endpointCaller';

/** The subgraph that serves the host's tools over MCP. */
export const MCP_SUBGRAPH = 'ribs';

/** Request headers of Streamable HTTP carried to the ribs subgraph as they came. */
const FORWARDED_REQUEST = ['accept', 'content-type', 'mcp-protocol-version', 'mcp-session-id', 'last-event-id'];
/** Response headers carried back. */
const FORWARDED_RESPONSE = ['content-type', 'mcp-session-id', 'mcp-protocol-version', 'allow'];

/** One JSON-RPC message, as far as the gateway reads it: its method, if it is a request or notification. */
const messageSchema = z.object({ method: z.string().optional() }).passthrough();
const bodySchema = z.union([messageSchema, z.array(messageSchema).min(1)]);

/**
 * The scopes a batch of MCP messages needs, as `@requiresScopes` writes them (an OR of AND-sets):
 * calling a tool `write` or `operate` (rib tools need `write` as `ribAction` does, `run_cancel` /
 * `run_steer` `operate` as `cancelRun` does: the ribs subgraph holds each tool to its own), anything
 * else (initialize, listing, ping, notifications) `read`.
 */
export function mcpScopes(messages: readonly { method?: string }[]): Scope[][] {
  return messages.some((m) => m.method === 'tools/call') ? [['write'], ['operate']] : [['read']];
}

export interface McpProxyOptions extends EndpointProxyOptions {
  /** The ribs subgraph's GraphQL URL in the graph in force; undefined when the graph has none. */
  ribsUrl(): string | undefined;
}

/**
 * `/mcp` on the gateway's origin: authenticates as `/graphql` does (an API token or JWT as a
 * bearer; 401 without one), holds the JSON-RPC messages to the caller's scopes (403), and forwards
 * them to the ribs subgraph's `/mcp` with the caller's signed assertion, its answer streamed back.
 * Refusals are JSON-RPC error bodies. The ribs subgraph unreachable is 503.
 */
export function mcpProxy(opts: McpProxyOptions): EndpointHandler {
  return async (req, res, readBody) => {
    const caller = await endpointCaller(req, opts, (err) => sendJsonRpcError(res, { status: err.status, message: err.message, code: err.code }));
    if (!caller) return;
    let raw = '';
    let messages: { method?: string }[] = [];
    if (req.method === 'POST') {
      try {
        raw = await readBody();
      } catch (err) {
        return sendJsonRpcError(res, { status: (err as { status?: number }).status ?? 400, message: (err as Error).message, code: 'BAD_REQUEST' });
      }
      const parsed = parseMessages(raw);
      if (!parsed) return sendJsonRpcError(res, { status: 400, message: 'the request body is not a JSON-RPC message or batch', code: 'BAD_REQUEST', rpcCode: -32700 });
      messages = parsed;
    }
    const required = mcpScopes(messages);
    if (!satisfiesScopes(effectiveScopes(caller.scopes), required)) {
      const what = required.length > 1 ? 'calling a tool over MCP' : 'MCP';
      const message = `${what} needs scope ${required.map((set) => set.join(' and ')).join(' or ')}; the caller (${caller.subject}) has ${caller.scopes.join(', ') || 'none'}`;
      countRefusal('gateway', 'scope');
      return sendJsonRpcError(res, { status: 403, message, code: 'FORBIDDEN', data: { requiredScopes: required } });
    }
    await forward(req, res, raw, caller, opts);
  };
}

function parseMessages(raw: string): { method?: string }[] | undefined {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return undefined;
  }
  const parsed = bodySchema.safeParse(json);
  if (!parsed.success) return undefined;
  return Array.isArray(parsed.data) ? parsed.data : [parsed.data];
}

async function forward(req: IncomingMessage, res: ServerResponse, raw: string, caller: Caller, opts: McpProxyOptions): Promise<void> {
  const base = opts.ribsUrl();
  if (!base) return sendJsonRpcError(res, { status: 503, message: `the supergraph has no ${MCP_SUBGRAPH} subgraph: MCP is not served`, code: 'SERVICE_UNAVAILABLE' });
  const headers: Record<string, string> = { [ASSERTION_HEADER]: await opts.assertions.sign(caller) };
  for (const name of FORWARDED_REQUEST) {
    const value = req.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  const aborted = new AbortController();
  res.on('close', () => aborted.abort());
  let upstream: Response;
  try {
    upstream = await fetch(new URL(MCP_PATH, base), { method: req.method ?? 'POST', headers, ...(req.method === 'POST' ? { body: raw } : {}), signal: aborted.signal });
  } catch (err) {
    opts.log.warn({ err, subgraph: MCP_SUBGRAPH }, 'mcp: subgraph unreachable');
    return sendJsonRpcError(res, { status: 503, message: `subgraph "${MCP_SUBGRAPH}" is unreachable; retry shortly`, code: 'SERVICE_UNAVAILABLE' });
  }
  res.statusCode = upstream.status;
  for (const name of FORWARDED_RESPONSE) {
    const value = upstream.headers.get(name);
    if (value !== null) res.setHeader(name, value);
  }
  if (!upstream.body) return void res.end();
  try {
    const reader = upstream.body.getReader();
    for (let next = await reader.read(); !next.done; next = await reader.read()) res.write(next.value);
  } catch (err) {
    if (!aborted.signal.aborted) opts.log.warn({ err }, 'mcp: the subgraph answer broke off');
  }
  res.end();
}
