import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { keelsonHome, MCP_PATH } from '@keelson/schema';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { Agent, fetch as undiciFetch } from 'undici';
import { z } from 'zod';

const settingsSchema = z.object({
  /** The mesh's MCP endpoint. @default http://127.0.0.1:<KEELSON_GATEWAY_PORT>/mcp */
  KEELSON_MCP_URL: z.string().url().optional(),
  KEELSON_GATEWAY_PORT: z.coerce.number().int().min(1).max(65535).default(4000),
  /** A bearer credential (API token or JWT). @default the contents of `<KEELSON_HOME>/token` */
  KEELSON_TOKEN: z.string().min(1).optional(),
  KEELSON_HOME: z.string().min(1).optional(),
  /** The local gateway serves HTTPS with this certificate: the default URL is https, trusting exactly it. */
  KEELSON_TLS_CERT: z.string().min(1).optional(),
});

export interface McpBridgeSettings {
  url: URL;
  token: string;
  /** The certificate the local gateway serves (KEELSON_TLS_CERT), trusted whatever name it carries: the bridge dials it on loopback. */
  pinnedCert?: Buffer;
}

/**
 * Where `npm run mcp` connects and as whom: `KEELSON_MCP_URL` (else the local gateway's `/mcp` on
 * `KEELSON_GATEWAY_PORT`) with `KEELSON_TOKEN` (else the admin token `npm start` keeps in
 * `<KEELSON_HOME>/token`).
 * @throws when no token is set and the token file cannot be read.
 */
export function mcpBridgeSettings(env: Record<string, string | undefined>): McpBridgeSettings {
  const parsed = settingsSchema.parse(Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')));
  // Without an explicit URL the bridge dials the local gateway: over HTTPS when it serves TLS itself.
  const local = !parsed.KEELSON_MCP_URL && parsed.KEELSON_TLS_CERT;
  let pinnedCert: Buffer | undefined;
  if (local) {
    try {
      pinnedCert = readFileSync(parsed.KEELSON_TLS_CERT!);
    } catch (err) {
      throw new Error(`KEELSON_TLS_CERT=${parsed.KEELSON_TLS_CERT} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the bridge trusts the local gateway's certificate`);
    }
  }
  const url = new URL(parsed.KEELSON_MCP_URL ?? `${local ? 'https' : 'http'}://127.0.0.1:${parsed.KEELSON_GATEWAY_PORT}${MCP_PATH}`);
  const pinned = pinnedCert ? { pinnedCert } : {};
  if (parsed.KEELSON_TOKEN) return { url, token: parsed.KEELSON_TOKEN, ...pinned };
  const file = `${keelsonHome(parsed, homedir())}/token`;
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new Error(`no KEELSON_TOKEN and no token file ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): start the mesh (npm start) or set KEELSON_TOKEN`);
  }
  if (!token) throw new Error(`${file} is empty: start the mesh (npm start) or set KEELSON_TOKEN`);
  return { url, token, ...pinned };
}

export interface McpBridgeOptions extends McpBridgeSettings {
  /** @default process.stdin */
  stdin?: Readable;
  /** @default process.stdout */
  stdout?: Writable;
  /** Where the bridge reports trouble (never stdout: that is the protocol). */
  warn: (message: string) => void;
}

export interface McpBridge {
  /** Resolves when the local side closes (stdin ends). */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * MCP over stdio for a local client, every message relayed as it is to the mesh's `/mcp`
 * (Streamable HTTP, the bearer token attached): the tools, their policies and scopes stay the
 * mesh's. A request the mesh refuses (401, 403, unreachable) is answered locally with a JSON-RPC
 * error naming why, so the client never waits on it.
 */
export async function startMcpStdioBridge(opts: McpBridgeOptions): Promise<McpBridge> {
  const upstream = new StreamableHTTPClientTransport(opts.url, {
    requestInit: { headers: { authorization: `Bearer ${opts.token}` } },
    ...(opts.pinnedCert ? { fetch: pinnedFetch(opts.pinnedCert) } : {}),
  });
  const local = new StdioServerTransport(opts.stdin, opts.stdout);
  const initializeIds = new Set<string | number>();
  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));

  upstream.onmessage = (message: JSONRPCMessage) => {
    // The negotiated version rides on every later request, as the SDK's own client sends it.
    if (isJSONRPCResultResponse(message) && initializeIds.delete(message.id) && typeof message.result.protocolVersion === 'string') {
      upstream.setProtocolVersion(message.result.protocolVersion);
    }
    void local.send(message).catch((err: unknown) => opts.warn(`mcp: could not write to stdout: ${(err as Error).message}`));
  };
  upstream.onerror = (err) => opts.warn(`mcp: ${err.message}`);
  local.onmessage = (message: JSONRPCMessage) => {
    if (isJSONRPCRequest(message) && message.method === 'initialize') initializeIds.add(message.id);
    upstream.send(message).catch((err: unknown) => {
      const reason = (err as Error).message;
      opts.warn(`mcp: ${opts.url.href} refused a message: ${reason}`);
      if (!isJSONRPCRequest(message)) return;
      void local.send({ jsonrpc: '2.0', id: message.id, error: { code: -32000, message: `the mesh at ${opts.url.href} refused the request: ${reason}` } });
    });
  };
  local.onerror = (err) => opts.warn(`mcp: ${err.message}`);
  local.onclose = () => {
    void upstream.close().finally(resolveClosed);
  };
  await upstream.start();
  await local.start();
  // StdioServerTransport stops reading but is not told when stdin ends: the bridge ends with it.
  (opts.stdin ?? process.stdin).once('end', () => void local.close());
  return {
    closed,
    async close() {
      await local.close();
      await closed;
    },
  };
}

/** A fetch that trusts exactly `cert` (the local gateway's own, dialled on loopback, whatever name it carries). */
function pinnedFetch(cert: Buffer): (url: string | URL, init?: RequestInit) => Promise<Response> {
  const dispatcher = new Agent({ connect: { ca: cert, checkServerIdentity: () => undefined } });
  return (url, init) => undiciFetch(url, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher }) as unknown as Promise<Response>;
}
