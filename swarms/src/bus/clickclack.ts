import WebSocket from 'ws';
import { toEvent, toBusMessage, toUser, wireTokenSchema, wireUserSchema, type BusEvent, type BusMessage, type BusUser } from './wire';

/** An answer of the server other than success, or no answer at all (`status` 0). */
export class ClickClackError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly route: string,
  ) {
    super(message);
    this.name = 'ClickClackError';
  }

  /** Any 401: the bearer was revoked, replaced or never valid (SWARM.md §1.7 gotcha 5). */
  get credentialRevoked(): boolean {
    return this.status === 401;
  }

  /** The same nonce was used earlier by this author for a different body. */
  get nonceConflict(): boolean {
    return this.status === 400 && /nonce was already used/.test(this.message);
  }

  /** The server did not answer (refused, reset, timed out) or answered 5xx. */
  get unreachable(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

export interface ClickClackClientOptions {
  /** The server's base URL, e.g. `http://127.0.0.1:18080`. */
  url: string;
  /** A bot token (`ccb_…`) or session token (`sst_…`); absent relies on the dev-bootstrap loopback owner. */
  token?: string;
  /** Sent as `X-Correlation-ID` (the server copies it into message events). */
  correlationId?: string;
  /** Per request. @default 15000 */
  timeoutMs?: number;
}

/** A bot token minted by the server (the raw token appears once). */
export interface MintedToken {
  id: string;
  token: string;
}

/** A page of channel roots. */
export interface BusMessagePage {
  messages: BusMessage[];
  oldestSeq: number | null;
  newestSeq: number | null;
  hasOlder: boolean;
  hasNewer: boolean;
}

/** A realtime socket: events arrive through `onEvent`; `closed` settles with the close code. */
export interface BusSubscription {
  readonly closed: Promise<{ code: number; reason: string; status?: number }>;
  close(): void;
}

/**
 * A small client of ClickClack's public HTTP and WebSocket API (SWARM.md §1.3–1.6), the only way the
 * swarm reaches the bus. One instance speaks as one identity; `withToken` speaks as another on the
 * same server (how each agent posts as itself).
 */
export class ClickClackClient {
  readonly url: string;

  constructor(private readonly opts: ClickClackClientOptions) {
    this.url = opts.url.replace(/\/+$/, '');
  }

  /** The same server as another identity. */
  withToken(token: string | undefined): ClickClackClient {
    return new ClickClackClient({ ...this.opts, token });
  }

  /** The same identity, with another correlation id. */
  withCorrelation(correlationId: string): ClickClackClient {
    return new ClickClackClient({ ...this.opts, correlationId });
  }

  private async request<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<{ status: number; data: T }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.opts.token) headers.authorization = `Bearer ${this.opts.token}`;
    if (this.opts.correlationId) headers['x-correlation-id'] = this.opts.correlationId;
    let res: Response;
    try {
      res = await fetch(`${this.url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 15_000),
      });
    } catch (err) {
      throw new ClickClackError(0, `ClickClack at ${this.url} did not answer ${method} ${path}: ${(err as Error).message}`, path);
    }
    const text = await res.text();
    let data: unknown = {};
    try {
      data = text ? JSON.parse(text) : {};
    } catch {
      data = { error: text.slice(0, 200) };
    }
    if (!res.ok) {
      const error = (data as { error?: unknown }).error;
      throw new ClickClackError(res.status, `${method} ${path}: ${res.status} ${typeof error === 'string' ? error : res.statusText}`, path);
    }
    return { status: res.status, data: data as T };
  }

  /** `GET /readyz` answered 200. */
  async ready(): Promise<boolean> {
    try {
      const res = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      return res.ok;
    } catch {
      return false;
    }
  }

  /** `GET /healthz` answered at all (anyone listening on the port). */
  async answers(): Promise<boolean> {
    try {
      const res = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      return true;
    } catch {
      return false;
    }
  }

  /**
   * An owner session through the dev-bootstrap magic link (loopback only): request, then consume.
   * Only for a server somebody else runs with `--dev-bootstrap`; the managed bus never does.
   * @returns the `sst_…` session token
   */
  async magicSession(email = 'local@clickclack.chat'): Promise<string> {
    const requested = await this.request<{ token?: string }>('POST', '/api/auth/magic/request', { email });
    if (!requested.data.token) throw new ClickClackError(requested.status, 'magic link request returned no token', '/api/auth/magic/request');
    return this.consumeMagicLink(requested.data.token);
  }

  /** `POST /api/auth/magic/consume`: a magic link (`mgt_…`) for a session token (`sst_…`). */
  async consumeMagicLink(token: string): Promise<string> {
    const consumed = await this.request<{ token?: string }>('POST', '/api/auth/magic/consume', { token });
    if (!consumed.data.token) throw new ClickClackError(consumed.status, 'magic link consume returned no session token', '/api/auth/magic/consume');
    return consumed.data.token;
  }

  async me(): Promise<BusUser> {
    const { data } = await this.request<{ user: unknown }>('GET', '/api/me');
    return toUser(wireUserSchema.parse(data.user));
  }

  async listWorkspaces(): Promise<{ id: string; name: string; slug: string }[]> {
    const { data } = await this.request<{ workspaces: { id: string; name: string; slug: string }[] }>('GET', '/api/workspaces');
    return data.workspaces ?? [];
  }

  /** `POST /api/workspaces` (a human session only). */
  async createWorkspace(input: { name: string; slug: string }): Promise<{ id: string; name: string; slug: string }> {
    const { data } = await this.request<{ workspace: { id: string; name: string; slug: string } }>('POST', '/api/workspaces', input);
    return data.workspace;
  }

  async listChannels(workspaceId: string): Promise<{ id: string; name: string }[]> {
    const { data } = await this.request<{ channels: { id: string; name: string }[] }>('GET', `/api/workspaces/${enc(workspaceId)}/channels`);
    return data.channels ?? [];
  }

  async createChannel(workspaceId: string, input: { name: string; displayTitle?: string }): Promise<{ id: string; name: string }> {
    const { data } = await this.request<{ channel: { id: string; name: string } }>('POST', `/api/workspaces/${enc(workspaceId)}/channels`, {
      name: input.name,
      ...(input.displayTitle ? { display_title: input.displayTitle } : {}),
    });
    return data.channel;
  }

  /**
   * A service bot with an initial token. With `setupNonce` a retry returns the same bot (and token
   * id) with a fresh plaintext, so a lost answer never leaves a second bot behind.
   */
  async createBot(
    workspaceId: string,
    input: { displayName: string; handle: string; scopes: string[]; tokenName: string; setupNonce?: string },
  ): Promise<{ bot: BusUser & { botId: string }; token: MintedToken }> {
    const { data } = await this.request<{ bot: unknown; bot_token: unknown }>('POST', `/api/workspaces/${enc(workspaceId)}/bots`, {
      display_name: input.displayName,
      handle: input.handle,
      scopes: input.scopes,
      token_name: input.tokenName,
      initial_token: true,
      ...(input.setupNonce ? { setup_nonce: input.setupNonce } : {}),
    });
    const raw = wireUserSchema.parse(data.bot);
    const token = wireTokenSchema.parse(data.bot_token);
    if (!token.token) throw new ClickClackError(200, 'bot creation returned no token plaintext', '/bots');
    return { bot: { ...toUser(raw), botId: raw.id }, token: { id: token.id, token: token.token } };
  }

  /** Another token of a bot; `setupNonce` makes it idempotent as for `createBot`. */
  async createBotToken(workspaceId: string, botId: string, input: { name: string; scopes: string[]; setupNonce?: string }): Promise<MintedToken> {
    const { data } = await this.request<{ bot_token: unknown }>('POST', `/api/workspaces/${enc(workspaceId)}/bots/${enc(botId)}/tokens`, {
      name: input.name,
      scopes: input.scopes,
      ...(input.setupNonce ? { setup_nonce: input.setupNonce } : {}),
    });
    const token = wireTokenSchema.parse(data.bot_token);
    if (!token.token) throw new ClickClackError(200, 'token creation returned no plaintext', '/tokens');
    return { id: token.id, token: token.token };
  }

  /** Revokes a bot token (idempotent on the server). */
  async revokeBotToken(tokenId: string): Promise<{ id: string; revokedAt: string | null }> {
    const { data } = await this.request<{ bot_token: unknown }>('POST', `/api/bot-tokens/${enc(tokenId)}/revoke`, {});
    const token = wireTokenSchema.parse(data.bot_token);
    return { id: token.id, revokedAt: token.revoked_at };
  }

  async deleteBot(botId: string): Promise<void> {
    await this.request('DELETE', `/api/bots/${enc(botId)}`);
  }

  /** The raw bot listing (its exact shape is not recorded; read it tolerantly). */
  async listBotsRaw(workspaceId: string): Promise<unknown> {
    return (await this.request('GET', `/api/workspaces/${enc(workspaceId)}/bots`)).data;
  }

  /** Posts a root; `replayed` when the nonce matched an earlier post of the same body (200, no event). */
  async postMessage(channelId: string, input: { body: string; nonce?: string }): Promise<{ message: BusMessage; replayed: boolean }> {
    const { status, data } = await this.request<{ message: unknown }>('POST', `/api/channels/${enc(channelId)}/messages`, input);
    return { message: toBusMessage(data.message), replayed: status === 200 };
  }

  /** Replies in a thread (always to its root: a reply to a reply is rejected). */
  async replyInThread(rootId: string, input: { body: string; nonce?: string }): Promise<{ message: BusMessage; replayed: boolean }> {
    const { status, data } = await this.request<{ message: unknown }>('POST', `/api/messages/${enc(rootId)}/thread/replies`, input);
    return { message: toBusMessage(data.message), replayed: status === 200 };
  }

  async getMessage(messageId: string): Promise<BusMessage> {
    const { data } = await this.request<{ message: unknown }>('GET', `/api/messages/${enc(messageId)}`);
    return toBusMessage(data.message);
  }

  /** The caller's own message with `nonce`, or undefined (recovers an id after a lost answer). */
  async messageByNonce(workspaceId: string, nonce: string): Promise<BusMessage | undefined> {
    try {
      const { data } = await this.request<{ message: unknown }>('GET', `/api/messages/by-nonce?workspace_id=${enc(workspaceId)}&nonce=${enc(nonce)}`);
      return toBusMessage(data.message);
    } catch (err) {
      if (err instanceof ClickClackError && err.status === 404) return undefined;
      throw err;
    }
  }

  /** Channel roots by sequence: `afterSeq`, `beforeSeq`, or the latest page. */
  async listMessages(channelId: string, opts: { afterSeq?: number; beforeSeq?: number; limit?: number } = {}): Promise<BusMessagePage> {
    const q = new URLSearchParams();
    if (opts.afterSeq !== undefined) q.set('after_seq', String(opts.afterSeq));
    else if (opts.beforeSeq !== undefined) q.set('before_seq', String(opts.beforeSeq));
    else q.set('mode', 'latest');
    if (opts.limit !== undefined) q.set('limit', String(opts.limit));
    const { data } = await this.request<{ messages: unknown[]; oldest_seq?: number | null; newest_seq?: number | null; has_older?: boolean; has_newer?: boolean }>(
      'GET',
      `/api/channels/${enc(channelId)}/messages?${q}`,
    );
    return {
      messages: (data.messages ?? []).map(toBusMessage),
      oldestSeq: data.oldest_seq ?? null,
      newestSeq: data.newest_seq ?? null,
      hasOlder: data.has_older ?? false,
      hasNewer: data.has_newer ?? false,
    };
  }

  /** A thread: its root and replies (the first `limit`, or the last with `latest`). */
  async getThread(rootId: string, opts: { latest?: boolean; limit?: number } = {}): Promise<{ root: BusMessage; replies: BusMessage[] }> {
    const q = new URLSearchParams();
    if (opts.limit !== undefined) q.set('limit', String(opts.limit));
    if (opts.latest !== undefined) q.set('latest', String(opts.latest));
    const { data } = await this.request<{ root: unknown; replies: unknown[] }>('GET', `/api/messages/${enc(rootId)}/thread${q.size ? `?${q}` : ''}`);
    return { root: toBusMessage(data.root), replies: (data.replies ?? []).map(toBusMessage) };
  }

  /** Pulls durable events after a cursor (`includeTail` captures the newest cursor before the page). */
  async pullEvents(workspaceId: string, opts: { afterCursor?: string; limit?: number; includeTail?: boolean } = {}): Promise<{ events: BusEvent[]; tailCursor?: string }> {
    const q = new URLSearchParams({ workspace_id: workspaceId });
    if (opts.afterCursor) q.set('after_cursor', opts.afterCursor);
    if (opts.limit !== undefined) q.set('limit', String(opts.limit));
    if (opts.includeTail) q.set('include_tail', 'true');
    const { data } = await this.request<{ events: unknown[]; tail_cursor?: string }>('GET', `/api/realtime/events?${q}`);
    return { events: (data.events ?? []).map(toEvent), ...(data.tail_cursor ? { tailCursor: data.tail_cursor } : {}) };
  }

  /** The newest durable cursor now, to open a socket from without replaying history (undefined: an empty log). */
  async tailCursor(workspaceId: string): Promise<string | undefined> {
    return (await this.pullEvents(workspaceId, { limit: 1, includeTail: true })).tailCursor;
  }

  /**
   * Opens the realtime socket (`Authorization` header): the durable events after `afterCursor` are
   * replayed, then live ones follow. `closed` settles with the close code (4001: resync, 1013:
   * reconnect, 1008: credential gone) or, for a refused upgrade, code 0 and the HTTP status.
   */
  subscribe(workspaceId: string, afterCursor: string | undefined, onEvent: (event: BusEvent) => void): BusSubscription {
    const q = new URLSearchParams({ workspace_id: workspaceId });
    if (afterCursor) q.set('after_cursor', afterCursor);
    const socket = new WebSocket(`${this.url.replace(/^http/, 'ws')}/api/realtime/ws?${q}`, {
      headers: this.opts.token ? { authorization: `Bearer ${this.opts.token}` } : {},
      handshakeTimeout: this.opts.timeoutMs ?? 15_000,
    });
    const closed = new Promise<{ code: number; reason: string; status?: number }>((resolve) => {
      socket.on('unexpected-response', (_req, res) => {
        resolve({ code: 0, reason: `upgrade refused: ${res.statusCode}`, status: res.statusCode });
        res.resume();
        socket.terminate();
      });
      socket.on('error', (err) => resolve({ code: 0, reason: err.message }));
      socket.on('close', (code, reason) => resolve({ code, reason: reason.toString() }));
    });
    socket.on('message', (data) => {
      let event: BusEvent;
      try {
        event = toEvent(JSON.parse(data.toString()));
      } catch {
        return;
      }
      onEvent(event);
    });
    return {
      closed,
      close: () => {
        if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
        else socket.close();
      },
    };
  }
}

const enc = encodeURIComponent;
