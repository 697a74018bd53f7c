import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { brotliDecompress, gunzip, inflate } from 'node:zlib';
import type { Logger } from '@keelson/service';
import type { ProtocolAdapter } from './protocols/adapter';
import { anthropic, anthropicCountTokens } from './protocols/anthropic';
import { chatCompletions } from './protocols/chatCompletions';
import { embeddings } from './protocols/embeddings';
import { newId } from './protocols/frames';
import { openaiErrorBody } from './protocols/openaiError';
import { responses } from './protocols/responses';
import { redactHeaders, RequestLog, type RecordedRequest } from './requestLog';
import { decide } from './script/decide';
import { capOutput, estimateTokens } from './script/replyPlan';
import type { Rule } from './script/rule';
import { parseScript, ScriptFile } from './script/scriptFile';
import { pause, sendJson, sendStream } from './sendAnswer';

/** The log calls the server makes; any `@keelson/service` logger fits. */
export type ModelServerLog = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface ModelServerOptions {
  /** Loopback only: the server has no authentication. @default '127.0.0.1' */
  host?: string;
  /** 0 picks a free port. @default 0 */
  port?: number;
  /** Rules consulted first, before the script file's and the built-in markers. */
  rules?: Rule[];
  /** A JSON script file (`KEELSON_MODEL_SCRIPT`), re-read whenever it changes. */
  scriptPath?: string;
  /** Dimension of embeddings when a request names none. @default 256 */
  embeddingDimensions?: number;
  /** Model ids `GET /v1/models` lists; any model name is accepted regardless. @default ['keelson-scripted'] */
  models?: string[];
  /** How many requests the log keeps. @default 200 */
  logLimit?: number;
  /** @default no logging */
  log?: ModelServerLog;
}

export interface ModelServer {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** For `ANTHROPIC_BASE_URL` (the SDKs append `/v1/messages`). */
  anthropicBaseUrl: string;
  /** For `OPENAI_BASE_URL` and `base_url` settings: `<url>/v1`. */
  openaiBaseUrl: string;
  /** Recorded requests with `seq` greater than `since`, oldest first. */
  requests(since?: number): RecordedRequest[];
  /** Empties the request log. */
  clear(): void;
  /** Replaces the rules given at start (`PUT /_keelson/rules` does the same over HTTP). */
  setRules(rules: Rule[]): void;
  /** Closes the server and its open connections; later calls return the same promise. */
  stop(): Promise<void>;
}

const MAX_BODY_BYTES = 64 * 1024 * 1024;

const decoders: Record<string, (b: Buffer) => Promise<Buffer>> = {
  gzip: promisify(gunzip),
  deflate: promisify(inflate),
  br: promisify(brotliDecompress),
};

const noLog: ModelServerLog = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined } as unknown as ModelServerLog;

/** True for addresses only this machine can reach. */
function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  let raw: Buffer = Buffer.concat(chunks);
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity' && raw.length > 0) {
    const decode = decoders[encoding];
    if (!decode) throw new HttpError(415, `content-encoding ${encoding} is not supported (gzip, deflate, br are)`);
    raw = await decode(raw);
  }
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  const looksJson = /json/i.test(req.headers['content-type'] ?? '') || /^\s*[[{]/.test(text);
  if (!looksJson) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new HttpError(400, `request body is not valid JSON: ${(err as Error).message}`);
  }
}

const PROTOCOL_ROUTES: Record<string, { api: 'anthropic' | 'chat' | 'responses'; adapter: ProtocolAdapter }> = {
  '/v1/messages': { api: 'anthropic', adapter: anthropic },
  '/v1/chat/completions': { api: 'chat', adapter: chatCompletions },
  '/chat/completions': { api: 'chat', adapter: chatCompletions },
  '/v1/responses': { api: 'responses', adapter: responses },
  '/responses': { api: 'responses', adapter: responses },
};

/** What the request handlers share: the logs, the rules (replaceable at runtime), the script file, the listed models and the embedding size. */
interface ServerState {
  log: ModelServerLog;
  requestLog: RequestLog;
  script: ScriptFile | undefined;
  rules: Rule[];
  models: readonly string[];
  dimensions: number;
}

/** Answers a model call: parses it with the protocol's adapter, decides the reply from the rules, then renders and sends it (streamed or whole). */
async function handleModelCall(state: ServerState, route: (typeof PROTOCOL_ROUTES)[string], body: unknown, entry: RecordedRequest, res: ServerResponse, signal: AbortSignal) {
  const { log, script } = state;
  const { adapter } = route;
  const parsed = adapter.parse(body);
  if ('invalid' in parsed) {
    entry.status = 400;
    sendJson(res, 400, adapter.errorBody(400, parsed.invalid));
    return;
  }
  let allRules: Rule[];
  try {
    allRules = [...state.rules, ...(script?.rules() ?? [])];
  } catch (err) {
    entry.status = 500;
    sendJson(res, 500, adapter.errorBody(500, (err as Error).message));
    return;
  }
  const cap = route.api === 'anthropic' ? parsed.body.max_tokens : route.api === 'chat' ? (parsed.body.max_completion_tokens ?? parsed.body.max_tokens) : undefined;
  const plan = capOutput(decide(parsed.conv, allRules), cap);
  Object.assign(entry, {
    userText: parsed.conv.userText,
    toolRounds: parsed.conv.toolRounds,
    decidedBy: plan.decidedBy,
    side: plan.side,
    toolCalls: plan.toolCalls.map((c) => c.name),
  });
  log.debug({ api: route.api, decidedBy: plan.decidedBy, toolCalls: entry.toolCalls }, 'model call answered');

  await pause(plan.delayMs, signal);
  if (plan.error) {
    entry.status = plan.error.status;
    sendJson(res, plan.error.status, adapter.errorBody(plan.error.status, plan.error.message));
    return;
  }
  const rendered = adapter.render(plan, parsed, estimateTokens(JSON.stringify(body).length));
  entry.status = 200;
  const headers = { 'x-request-id': newId('req') };
  if ('stream' in rendered) {
    await sendStream(res, rendered.stream, plan.durationMs, signal, headers);
  } else {
    await pause(plan.durationMs, signal);
    sendJson(res, 200, rendered.json, headers);
  }
}

/** `GET /v1/models`, in the Anthropic or the OpenAI shape. */
function modelList(models: readonly string[], anthropicShape: boolean) {
  if (anthropicShape) {
    const data = models.map((id) => ({ type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' }));
    return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
  }
  return { object: 'list', data: models.map((id) => ({ id, object: 'model', created: 1735689600, owned_by: 'keelson' })) };
}

/** Handles one request: control routes apart, every other request recorded in the request log and routed to its API. */
async function handle(state: ServerState, req: IncomingMessage, res: ServerResponse) {
  const { log, requestLog } = state;
  const ac = new AbortController();
  res.on('close', () => ac.abort());
  const url = new URL(req.url ?? '/', 'http://model.local');
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const method = req.method ?? 'GET';

  if (path.startsWith('/_keelson/')) return handleControl(state, req, res, path, method, url);

  const entry = requestLog.add({ method, path: `${url.pathname}${url.search}`, headers: redactHeaders(req.headers), body: undefined });
  try {
    const body = await readBody(req);
    entry.body = body;
    const route = PROTOCOL_ROUTES[path];
    if (route && method === 'POST') {
      entry.api = route.api;
      return await handleModelCall(state, route, body, entry, res, ac.signal);
    }
    if (path === '/v1/messages/count_tokens' && method === 'POST') {
      entry.api = 'count_tokens';
      entry.status = 200;
      return sendJson(res, 200, anthropicCountTokens(body));
    }
    if ((path === '/v1/embeddings' || path === '/embeddings') && method === 'POST') {
      entry.api = 'embeddings';
      const answer = embeddings(body, state.dimensions);
      entry.status = answer.status;
      return sendJson(res, answer.status, answer.json);
    }
    const modelMatch = /^(?:\/v1)?\/models(?:\/(.+))?$/.exec(path);
    if (modelMatch && method === 'GET') {
      entry.api = 'models';
      const anthropicShape = req.headers['anthropic-version'] !== undefined;
      if (!modelMatch[1]) {
        entry.status = 200;
        return sendJson(res, 200, modelList(state.models, anthropicShape));
      }
      const id = decodeURIComponent(modelMatch[1]);
      entry.status = 200;
      return sendJson(res, 200, anthropicShape ? { type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' } : { id, object: 'model', created: 1735689600, owned_by: 'keelson' });
    }
    entry.status = 404;
    // HEAD / (claude-code's reachability probe) lands here: a 404 is what it expects.
    return sendJson(res, 404, openaiErrorBody(404, `no route for ${method} ${url.pathname}`));
  } catch (err) {
    const status = err instanceof HttpError ? err.status : 500;
    if (status === 500) log.error({ err }, 'model server request failed');
    entry.status = status;
    const adapter = PROTOCOL_ROUTES[path]?.adapter;
    sendJson(res, status, adapter ? adapter.errorBody(status, (err as Error).message) : openaiErrorBody(status, (err as Error).message));
  }
}

/** The `/_keelson/` control routes: health, the request log, and replacing the rules. */
async function handleControl(state: ServerState, req: IncomingMessage, res: ServerResponse, path: string, method: string, url: URL) {
  const { requestLog } = state;
  try {
    if (path === '/_keelson/health' && method === 'GET') return sendJson(res, 200, { ok: true });
    if (path === '/_keelson/requests' && method === 'GET') {
      return sendJson(res, 200, { requests: requestLog.list(Number(url.searchParams.get('since') ?? 0) || 0) });
    }
    if (path === '/_keelson/requests' && method === 'DELETE') {
      requestLog.clear();
      return sendJson(res, 200, { cleared: true });
    }
    if (path === '/_keelson/rules' && method === 'PUT') {
      state.rules = parseScript(await readBody(req), 'PUT /_keelson/rules');
      return sendJson(res, 200, { rules: state.rules.length });
    }
    return sendJson(res, 404, { error: { message: `no route for ${method} ${path}` } });
  } catch (err) {
    return sendJson(res, err instanceof HttpError ? err.status : 400, { error: { message: (err as Error).message } });
  }
}

/**
 * Starts the local model server: the Anthropic Messages, OpenAI Chat Completions, Responses and
 * Embeddings APIs over loopback HTTP, answering from scripted rules, recording every request.
 * @throws when `host` is not a loopback address
 */
export async function startModelServer(opts: ModelServerOptions = {}): Promise<ModelServer> {
  const host = opts.host ?? '127.0.0.1';
  if (!isLoopback(host)) {
    throw new Error(`model server: refusing to bind ${host}: it has no authentication, so it binds loopback only (127.0.0.1, ::1, localhost)`);
  }
  const log = opts.log ?? noLog;
  const requestLog = new RequestLog(opts.logLimit ?? 200);
  const script = opts.scriptPath ? new ScriptFile(opts.scriptPath) : undefined;
  // Fail at start on a bad script rather than on the first request.
  script?.rules();
  const state: ServerState = {
    log,
    requestLog,
    script,
    rules: opts.rules ?? [],
    models: opts.models ?? ['keelson-scripted'],
    dimensions: opts.embeddingDimensions ?? 256,
  };

  const server = createServer((req, res) => void handle(state, req, res));
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const url = `http://${hostPart}:${address.port}`;
  log.info({ url }, 'model server listening');
  let stopping: Promise<void> | undefined;

  return {
    url,
    anthropicBaseUrl: url,
    openaiBaseUrl: `${url}/v1`,
    requests: (since) => requestLog.list(since),
    clear: () => requestLog.clear(),
    setRules: (next) => {
      state.rules = next;
    },
    stop: () => {
      stopping ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      });
      return stopping;
    },
  };
}
