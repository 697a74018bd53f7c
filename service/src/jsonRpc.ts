import type { ServerResponse } from 'node:http';
import type { ErrorCode, RequestErrorCode } from '@keelson/schema';

/** A request refused before any JSON-RPC method ran (MCP over HTTP). */
export interface JsonRpcRefusal {
  status: number;
  message: string;
  /** The mesh's registry code, as a GraphQL error's `extensions.code`. */
  code: ErrorCode | RequestErrorCode;
  /** @default -32000 (server error); -32700 for a body that is not JSON */
  rpcCode?: number;
  /** More of `error.data` (e.g. `requiredScopes`). */
  data?: Record<string, unknown>;
}

/** The JSON-RPC 2.0 error answer: `error.data` carries the registry code and HTTP status. */
export function jsonRpcErrorBody(refusal: JsonRpcRefusal): string {
  const data = { code: refusal.code, status: refusal.status, ...refusal.data };
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: refusal.rpcCode ?? -32000, message: refusal.message, data } });
}

/** Answers with a {@link jsonRpcErrorBody} at the refusal's status (a 401 also names the Bearer scheme). */
export function sendJsonRpcError(res: ServerResponse, refusal: JsonRpcRefusal): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.statusCode = refusal.status;
  res.setHeader('content-type', 'application/json');
  if (refusal.status === 401) res.setHeader('www-authenticate', 'Bearer');
  res.end(jsonRpcErrorBody(refusal));
}
