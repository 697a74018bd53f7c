import type { IncomingMessage } from 'node:http';
import { hashSecret, secret } from './ids';
import { HttpError, isLocalRequest, ok, optStr, str, type Reply } from './http';
import { expandScopes } from './scopes';
import type { BotTokenRow, ChannelRow, EventRow, MessageRow, Role, StandinStore, UserRow, WorkspaceRow } from './store';

/** Who a request acts as (SWARM.md §1.2 `currentActor`). */
export interface Actor {
  user: UserRow;
  /** Scopes of a bot token; humans act with every scope. */
  scopes: ReadonlySet<string> | 'all';
  /** A bot token is bound to one workspace. */
  tokenWorkspaceId?: string;
  tokenId?: string;
}

/** Observed body of a 401 for a bad, unknown or revoked bearer. */
export const REVOKED_BODY = 'sql: no rows in result set';

const HANDLE = /^[a-z0-9][a-z0-9_-]{1,31}$/;
const MENTION = /@([a-z0-9][a-z0-9_-]{1,31})/gi;
const MAGIC_TTL_MS = 15 * 60 * 1000;
const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;
const MESSAGE_KINDS = new Set(['message', 'agent_commentary', 'agent_tool']);
/** Text that is not valid UTF-16, hence not encodable as UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export interface StandinOptions {
  devBootstrap: boolean;
  /** Emulated release, for the version differences SWARM.md records. */
  version: string;
}

/** Hooks the realtime hub gives the API. */
export interface RealtimeHooks {
  published(event: EventRow): void;
  /** A live-only event (never stored, `cursor: ""`). */
  liveOnly(event: Omit<EventRow, 'cursor' | 'id'> & { id: string; cursor: '' }): void;
  tokenRevoked(tokenId: string): void;
  botRemoved(botId: string): void;
}

/** Compares dotted versions (`0.4.0` < `0.10.1`). */
export function versionAtLeast(version: string, min: string): boolean {
  const a = version.split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0);
  const b = min.split('.').map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < 3; i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) > (b[i] ?? 0);
  }
  return true;
}

/**
 * ClickClack's HTTP API as SWARM.md records it: the owner bootstrap, magic-link sessions, service
 * bots and their tokens, channels, messages with author-scoped nonces, threads, and the durable
 * event log. Routes and behaviours SWARM.md does not record are not here (they answer 404).
 */
export class StandinApi {
  private realtime: RealtimeHooks | undefined;

  constructor(
    readonly store: StandinStore,
    readonly options: StandinOptions,
  ) {}

  attachRealtime(hooks: RealtimeHooks): void {
    this.realtime = hooks;
  }

  /** At start with dev bootstrap and no users: Local Captain, workspace ClickClack, channel general. */
  bootstrap(log: (line: string) => void): void {
    if (!this.options.devBootstrap) return;
    const existing = this.store.all('users').find((u) => u.kind === 'human');
    if (existing) {
      log(`dev auth user: ${existing.display_name} (${existing.id})`);
      return;
    }
    const now = new Date().toISOString();
    const user = this.store.put('users', {
      id: this.store.newId('usr'),
      kind: 'human',
      display_name: 'Local Captain',
      email: 'local@clickclack.chat',
      handle: null,
      owner_user_id: null,
      created_at: now,
      deleted_at: null,
      former_handle: null,
    });
    const ws = this.store.put('workspaces', { id: this.store.newId('wsp'), name: 'ClickClack', slug: 'clickclack', created_at: now });
    this.store.put('members', { id: `${ws.id}:${user.id}`, workspace_id: ws.id, user_id: user.id, role: 'owner', removed_at: null });
    this.store.put('channels', { id: this.store.newId('chn'), workspace_id: ws.id, name: 'general', display_title: null, kind: 'public', created_at: now, last_seq: 0 });
    log(`dev auth user: ${user.display_name} (${user.id})`);
  }

  // ---------------------------------------------------------------- identity

  /** Resolves the caller; a bad bearer is 401 and never falls through to the dev rules. */
  actor(req: IncomingMessage, bearer?: string): Actor {
    const header = req.headers.authorization;
    const token = bearer ?? (header && /^bearer\s+/i.test(header) ? header.replace(/^bearer\s+/i, '').trim() : undefined);
    if (token !== undefined) return this.actorOfToken(token);
    if (this.options.devBootstrap && isLocalRequest(req)) {
      const named = req.headers['x-clickclack-user'];
      const user = typeof named === 'string' ? this.store.get('users', named) : this.firstUser();
      if (user && !user.deleted_at) return { user, scopes: 'all' };
    }
    throw new HttpError(401, 'authentication required');
  }

  actorOfToken(token: string): Actor {
    const hash = hashSecret(token);
    if (token.startsWith('ccb_')) {
      const row = this.store.all('botTokens').find((t) => t.token_hash === hash);
      const bot = row ? this.store.get('users', row.bot_id) : undefined;
      if (!row || row.revoked_at || !bot || bot.deleted_at) throw new HttpError(401, REVOKED_BODY);
      return { user: bot, scopes: new Set(row.scopes), tokenWorkspaceId: row.workspace_id, tokenId: row.id };
    }
    const session = this.store.all('sessions').find((s) => s.token_hash === hash);
    const user = session ? this.store.get('users', session.user_id) : undefined;
    if (!session || Date.parse(session.expires_at) < Date.now() || !user || user.deleted_at) throw new HttpError(401, REVOKED_BODY);
    return { user, scopes: 'all' };
  }

  private firstUser(): UserRow | undefined {
    return this.store
      .all('users')
      .filter((u) => u.kind === 'human' && !u.deleted_at)
      .sort((a, b) => a.id.localeCompare(b.id))[0];
  }

  need(actor: Actor, scope: string): void {
    if (actor.scopes !== 'all' && !actor.scopes.has(scope)) throw new HttpError(403, `bot token is missing scope ${scope}`);
  }

  /** The caller's role in `workspaceId` (a bot token must be bound to it); 403 otherwise. */
  membership(actor: Actor, workspaceId: string): Role {
    if (!this.store.get('workspaces', workspaceId)) throw new HttpError(404, 'workspace not found');
    if (actor.tokenWorkspaceId !== undefined && actor.tokenWorkspaceId !== workspaceId) throw new HttpError(403, 'bot token cannot access this workspace');
    const member = this.store.get('members', `${workspaceId}:${actor.user.id}`);
    if (!member || member.removed_at) throw new HttpError(403, 'not a member of this workspace');
    return member.role;
  }

  /** Whether a user may still see a workspace's events (membership is rechecked per event). */
  isMember(userId: string, workspaceId: string): boolean {
    const member = this.store.get('members', `${workspaceId}:${userId}`);
    const user = this.store.get('users', userId);
    return !!member && !member.removed_at && !!user && !user.deleted_at;
  }

  // ---------------------------------------------------------------- views

  userView(u: UserRow): Record<string, unknown> {
    return {
      id: u.id,
      kind: u.kind,
      display_name: u.display_name,
      handle: u.handle,
      owner_user_id: u.owner_user_id,
      created_at: u.created_at,
      ...(u.kind === 'human' ? { email: u.email } : {}),
      ...(u.deleted_at ? { deleted_at: u.deleted_at, former_handle: u.former_handle } : {}),
    };
  }

  tokenView(t: BotTokenRow, plaintext?: string): Record<string, unknown> {
    return {
      id: t.id,
      bot_id: t.bot_id,
      workspace_id: t.workspace_id,
      name: t.name,
      scopes: t.scopes,
      created_at: t.created_at,
      revoked_at: t.revoked_at,
      ...(plaintext ? { token: plaintext } : {}),
    };
  }

  messageView(m: MessageRow): Record<string, unknown> {
    const author = this.store.get('users', m.author_id);
    return {
      id: m.id,
      workspace_id: m.workspace_id,
      channel_id: m.channel_id,
      author_id: m.author_id,
      author: author ? this.userView(author) : null,
      body: m.body,
      nonce: m.nonce,
      kind: m.kind,
      turn_id: m.turn_id,
      quoted_message_id: m.quoted_message_id,
      thread_root_id: m.thread_root_id,
      channel_seq: m.channel_seq,
      created_at: m.created_at,
      ...(m.thread_root_id === m.id ? { thread_state: this.threadState(m) } : {}),
    };
  }

  private threadState(root: MessageRow): Record<string, unknown> {
    return { root_message_id: root.id, reply_count: root.reply_count, last_reply_at: root.last_reply_at };
  }

  eventView(e: EventRow | (Omit<EventRow, 'cursor'> & { cursor: '' })): Record<string, unknown> {
    return { ...e };
  }

  // ---------------------------------------------------------------- auth routes

  magicRequest(req: IncomingMessage, body: Record<string, unknown>): Reply {
    if (!this.options.devBootstrap) throw new HttpError(501, 'magic link request requires dev auth');
    if (!isLocalRequest(req)) throw new HttpError(403, 'magic link request is only available from loopback');
    const email = str(body, 'email').trim().toLowerCase();
    const user = this.store.all('users').find((u) => u.kind === 'human' && u.email === email && !u.deleted_at);
    if (!user) throw new HttpError(404, 'user not found');
    const token = secret('mgt');
    const now = Date.now();
    const link = this.store.put('magicLinks', {
      id: this.store.newId('mgl'),
      email,
      user_id: user.id,
      token_hash: hashSecret(token),
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + MAGIC_TTL_MS).toISOString(),
      consumed_at: null,
    });
    return ok({ magic_link: { id: link.id, email: link.email, created_at: link.created_at, expires_at: link.expires_at }, token }, 201);
  }

  magicConsume(req: IncomingMessage, body: Record<string, unknown>): Reply {
    const type = req.headers['content-type'] ?? '';
    if (!/^application\/json\b/i.test(type)) throw new HttpError(415, 'Content-Type must be application/json');
    const origin = req.headers.origin;
    if (origin && req.headers.host && new URL(origin).host !== req.headers.host) throw new HttpError(403, 'cross-site request refused');
    const token = str(body, 'token');
    const link = this.store.all('magicLinks').find((l) => l.token_hash === hashSecret(token));
    if (!link || link.consumed_at || Date.parse(link.expires_at) < Date.now()) throw new HttpError(401, 'invalid or expired magic link');
    this.store.put('magicLinks', { ...link, consumed_at: new Date().toISOString() });
    const user = this.store.get('users', link.user_id)!;
    const sessionToken = secret('sst');
    const now = Date.now();
    const session = this.store.put('sessions', {
      id: this.store.newId('ses'),
      user_id: user.id,
      token_hash: hashSecret(sessionToken),
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + SESSION_TTL_MS).toISOString(),
    });
    return ok({ user: this.userView(user), session: { id: session.id, expires_at: session.expires_at }, token: sessionToken });
  }

  me(actor: Actor): Reply {
    this.need(actor, 'profile:read');
    return ok({ user: this.userView(actor.user) });
  }

  // ---------------------------------------------------------------- workspaces

  private workspaceView(w: WorkspaceRow): Record<string, unknown> {
    return { ...w };
  }

  listWorkspaces(actor: Actor): Reply {
    this.need(actor, 'workspaces:read');
    const ids = this.store
      .all('members')
      .filter((m) => m.user_id === actor.user.id && !m.removed_at)
      .map((m) => m.workspace_id)
      .filter((id) => actor.tokenWorkspaceId === undefined || id === actor.tokenWorkspaceId);
    return ok({ workspaces: ids.map((id) => this.workspaceView(this.store.get('workspaces', id)!)) });
  }

  getWorkspace(actor: Actor, ws: string): Reply {
    this.need(actor, 'workspaces:read');
    this.membership(actor, ws);
    return ok({ workspace: this.workspaceView(this.store.get('workspaces', ws)!) });
  }

  createWorkspace(actor: Actor, body: Record<string, unknown>): Reply {
    if (actor.user.kind !== 'human') throw new HttpError(403, 'bot tokens cannot create workspaces');
    const name = str(body, 'name');
    const slug = str(body, 'slug');
    if (this.store.all('workspaces').some((w) => w.slug === slug)) throw new HttpError(409, 'workspace slug already exists');
    const ws = this.store.put('workspaces', { id: this.store.newId('wsp'), name, slug, created_at: new Date().toISOString() });
    this.store.put('members', { id: `${ws.id}:${actor.user.id}`, workspace_id: ws.id, user_id: actor.user.id, role: 'owner', removed_at: null });
    return ok({ workspace: this.workspaceView(ws) }, 201);
  }

  // ---------------------------------------------------------------- channels

  private channelView(c: ChannelRow): Record<string, unknown> {
    return { id: c.id, workspace_id: c.workspace_id, name: c.name, display_title: c.display_title, kind: c.kind, created_at: c.created_at };
  }

  listChannels(actor: Actor, ws: string): Reply {
    this.need(actor, 'channels:read');
    this.membership(actor, ws);
    return ok({ channels: this.store.all('channels').filter((c) => c.workspace_id === ws).map((c) => this.channelView(c)) });
  }

  createChannel(actor: Actor, ws: string, body: Record<string, unknown>): Reply {
    this.need(actor, 'channels:write');
    const role = this.membership(actor, ws);
    if (role === 'guest') throw new HttpError(403, 'guests cannot create channels');
    const name = str(body, 'name').trim();
    if (this.store.all('channels').some((c) => c.workspace_id === ws && c.name === name)) throw new HttpError(409, 'channel name already exists');
    const channel = this.store.put('channels', {
      id: this.store.newId('chn'),
      workspace_id: ws,
      name,
      display_title: optStr(body, 'display_title') ?? null,
      kind: optStr(body, 'kind') ?? 'public',
      created_at: new Date().toISOString(),
      last_seq: 0,
    });
    const event = this.publish({ type: 'channel.created', workspace_id: ws, channel_id: channel.id, seq: null, payload: { channel_id: channel.id }, mentioned_user_ids: [] });
    return ok({ channel: this.channelView(channel), event: this.eventView(event) }, 201);
  }

  channelOf(actor: Actor, channelId: string): ChannelRow {
    const channel = this.store.get('channels', channelId);
    if (!channel) throw new HttpError(404, 'channel not found');
    this.membership(actor, channel.workspace_id);
    return channel;
  }

  // ---------------------------------------------------------------- bots

  private requireBotManager(actor: Actor, ws: string): void {
    if (actor.user.kind !== 'human') throw new HttpError(403, 'bot tokens cannot create bots');
    const role = this.membership(actor, ws);
    if (role !== 'owner' && role !== 'moderator') throw new HttpError(403, 'only an owner or moderator can manage service bots');
  }

  private scopesOf(body: Record<string, unknown>): string[] {
    const raw = body.scopes;
    if (!Array.isArray(raw) || raw.length === 0 || !raw.every((s) => typeof s === 'string')) throw new HttpError(400, 'scopes must be a non-empty list of scopes');
    const expanded = expandScopes(raw as string[]);
    if ('unknown' in expanded) throw new HttpError(400, `unknown scope ${expanded.unknown}`);
    return expanded.scopes;
  }

  private mintToken(botId: string, ws: string, name: string, scopes: string[], setupNonce: string | null): { row: BotTokenRow; plaintext: string } {
    const plaintext = secret('ccb');
    const row = this.store.put('botTokens', {
      id: this.store.newId('btok'),
      bot_id: botId,
      workspace_id: ws,
      name,
      scopes,
      token_hash: hashSecret(plaintext),
      setup_nonce: setupNonce,
      created_at: new Date().toISOString(),
      revoked_at: null,
    });
    return { row, plaintext };
  }

  /** A retry with the same setup nonce: the same token, with a fresh one-time plaintext. */
  private rotate(row: BotTokenRow): string {
    const plaintext = secret('ccb');
    this.store.put('botTokens', { ...row, token_hash: hashSecret(plaintext) });
    this.realtime?.tokenRevoked(row.id); // the old plaintext no longer authenticates anything
    return plaintext;
  }

  createBot(actor: Actor, ws: string, body: Record<string, unknown>): Reply {
    this.requireBotManager(actor, ws);
    const setupNonce = optStr(body, 'setup_nonce');
    if (setupNonce !== undefined) {
      const known = this.store.get('botNonces', `${ws}:${actor.user.id}:${setupNonce}`);
      const bot = known ? this.store.get('users', known.bot_id) : undefined;
      if (known && bot && !bot.deleted_at) {
        const token = known.token_id ? this.store.get('botTokens', known.token_id) : undefined;
        const plaintext = token ? this.rotate(token) : undefined;
        return ok({ bot: this.userView(bot), bot_token: token ? this.tokenView(this.store.get('botTokens', token.id)!, plaintext) : null });
      }
    }
    const handle = str(body, 'handle');
    if (!HANDLE.test(handle)) throw new HttpError(400, 'handle must match ^[a-z0-9][a-z0-9_-]{1,31}$');
    if (this.store.all('users').some((u) => u.handle === handle && !u.deleted_at)) throw new HttpError(409, 'handle is already taken');
    const scopes = this.scopesOf(body);
    const displayName = str(body, 'display_name');
    const now = new Date().toISOString();
    const bot = this.store.put('users', {
      id: this.store.newId('usr'),
      kind: 'bot',
      display_name: displayName,
      email: null,
      handle,
      owner_user_id: null,
      created_at: now,
      deleted_at: null,
      former_handle: null,
    });
    this.store.put('members', { id: `${ws}:${bot.id}`, workspace_id: ws, user_id: bot.id, role: 'bot', removed_at: null });
    const minted = body.initial_token === false ? undefined : this.mintToken(bot.id, ws, optStr(body, 'token_name') ?? 'default', scopes, null);
    if (setupNonce !== undefined) {
      this.store.put('botNonces', { id: `${ws}:${actor.user.id}:${setupNonce}`, bot_id: bot.id, token_id: minted?.row.id ?? null });
    }
    return ok({ bot: this.userView(bot), bot_token: minted ? this.tokenView(minted.row, minted.plaintext) : null }, 201);
  }

  createBotToken(actor: Actor, ws: string, botId: string, body: Record<string, unknown>): Reply {
    this.requireBotManager(actor, ws);
    const bot = this.store.get('users', botId);
    if (!bot || bot.kind !== 'bot' || bot.deleted_at || !this.isMember(bot.id, ws)) throw new HttpError(404, 'bot not found');
    const setupNonce = optStr(body, 'setup_nonce');
    if (setupNonce !== undefined) {
      const existing = this.store.all('botTokens').find((t) => t.bot_id === botId && t.setup_nonce === setupNonce);
      if (existing) {
        const plaintext = this.rotate(existing);
        return ok({ bot_token: this.tokenView(this.store.get('botTokens', existing.id)!, plaintext) });
      }
    }
    const minted = this.mintToken(botId, ws, str(body, 'name'), this.scopesOf(body), setupNonce ?? null);
    return ok({ bot_token: this.tokenView(minted.row, minted.plaintext) }, 201);
  }

  revokeBotToken(actor: Actor, tokenId: string): Reply {
    const row = this.store.get('botTokens', tokenId);
    if (!row) throw new HttpError(404, 'bot token not found');
    this.requireBotManager(actor, row.workspace_id);
    const revoked = row.revoked_at ? row : this.store.put('botTokens', { ...row, revoked_at: new Date().toISOString() });
    this.realtime?.tokenRevoked(tokenId);
    return ok({ bot_token: this.tokenView(revoked) });
  }

  deleteBot(actor: Actor, botId: string): Reply {
    const bot = this.store.get('users', botId);
    if (!bot || bot.kind !== 'bot' || bot.deleted_at) throw new HttpError(404, 'bot not found');
    const memberships = this.store.all('members').filter((m) => m.user_id === botId && !m.removed_at);
    for (const m of memberships) this.requireBotManager(actor, m.workspace_id);
    const now = new Date().toISOString();
    for (const t of this.store.all('botTokens').filter((t) => t.bot_id === botId && !t.revoked_at)) this.store.put('botTokens', { ...t, revoked_at: now });
    for (const m of memberships) this.store.put('members', { ...m, removed_at: now });
    const deleted = this.store.put('users', { ...bot, handle: null, former_handle: bot.handle, deleted_at: now });
    for (const m of memberships) {
      this.realtime?.liveOnly({ id: this.store.newId('evt'), cursor: '', type: 'bot.deleted', workspace_id: m.workspace_id, channel_id: null, seq: null, created_at: now, payload: { bot_id: botId }, mentioned_user_ids: [] });
    }
    this.realtime?.botRemoved(botId);
    return ok({ deleted_bot: { id: deleted.id, display_name: deleted.display_name, former_handle: deleted.former_handle, deleted_at: deleted.deleted_at } });
  }

  /**
   * Every service bot of the workspace with its tokens (never their secrets). SWARM.md records the
   * route and that it shows `revoked_at` on every token, not the exact shape: this one is a guess
   * readers should take tolerantly.
   */
  listBots(actor: Actor, ws: string): Reply {
    this.requireBotManager(actor, ws);
    const ids = new Set(this.store.all('members').filter((m) => m.workspace_id === ws && m.role === 'bot').map((m) => m.user_id));
    const bots = this.store
      .all('users')
      .filter((u) => ids.has(u.id))
      .map((u) => ({ ...this.userView(u), tokens: this.store.all('botTokens').filter((t) => t.bot_id === u.id).map((t) => this.tokenView(t)) }));
    return ok({ bots });
  }

  // ---------------------------------------------------------------- messages

  private checkNonce(nonce: string | undefined): void {
    if (nonce === undefined) return;
    if ([...nonce].length > 128 || nonce.includes('\u0000') || LONE_SURROGATE.test(nonce)) {
      throw new HttpError(400, 'nonce must be at most 128 runes of valid UTF-8 without NUL');
    }
  }

  private byNonce(authorId: string, nonce: string): MessageRow | undefined {
    return this.store.all('messages').find((m) => m.author_id === authorId && m.nonce === nonce);
  }

  private mentions(workspaceId: string, body: string): string[] {
    const handles = new Set([...body.matchAll(MENTION)].map((m) => m[1]!.toLowerCase()));
    if (handles.size === 0) return [];
    return this.store
      .all('users')
      .filter((u) => u.handle !== null && handles.has(u.handle) && !u.deleted_at && this.isMember(u.id, workspaceId))
      .map((u) => u.id);
  }

  private publish(e: Omit<EventRow, 'id' | 'cursor' | 'created_at'>): EventRow {
    const event = this.store.appendEvent(e);
    this.realtime?.published(event);
    return event;
  }

  postMessage(actor: Actor, channelId: string, body: Record<string, unknown>, correlationId: string): Reply {
    this.need(actor, 'messages:write');
    const channel = this.channelOf(actor, channelId);
    const text = str(body, 'body');
    const nonce = optStr(body, 'nonce');
    this.checkNonce(nonce);
    const kind = optStr(body, 'kind') ?? 'message';
    if (!MESSAGE_KINDS.has(kind)) throw new HttpError(400, `unknown message kind ${kind}`);
    const turnId = optStr(body, 'turn_id') ?? null;
    if (kind === 'message' && turnId !== null) throw new HttpError(400, 'turn_id is only allowed on agent activity messages');
    if (kind !== 'message') {
      if (actor.user.kind !== 'bot') throw new HttpError(403, 'agent activity messages need a bot token');
      this.need(actor, 'agent_activity:write');
    }
    if (nonce !== undefined) {
      const prior = this.byNonce(actor.user.id, nonce);
      if (prior) {
        if (prior.body !== text) throw new HttpError(400, 'client nonce was already used for a different message');
        return ok({ message: this.messageView(prior), event: null });
      }
    }
    const seq = channel.last_seq + 1;
    this.store.put('channels', { ...channel, last_seq: seq });
    const id = this.store.newId('msg');
    const message = this.store.put('messages', {
      id,
      workspace_id: channel.workspace_id,
      channel_id: channel.id,
      author_id: actor.user.id,
      body: text,
      nonce: nonce ?? null,
      kind,
      turn_id: turnId,
      quoted_message_id: optStr(body, 'quoted_message_id') ?? null,
      thread_root_id: id,
      channel_seq: seq,
      created_at: new Date().toISOString(),
      reply_count: 0,
      last_reply_at: null,
    });
    const event = this.publish({
      type: 'message.created',
      workspace_id: channel.workspace_id,
      channel_id: channel.id,
      seq,
      payload: {
        message_id: id,
        author_id: actor.user.id,
        ...(nonce !== undefined ? { nonce } : {}),
        correlation_id: correlationId,
        ...(kind !== 'message' ? { kind } : {}),
        ...(turnId !== null ? { turn_id: turnId } : {}),
      },
      mentioned_user_ids: this.mentions(channel.workspace_id, text),
    });
    return ok({ message: this.messageView(message), event: this.eventView(event) }, 201);
  }

  replyInThread(actor: Actor, rootId: string, body: Record<string, unknown>, correlationId: string): Reply {
    this.need(actor, 'threads:write');
    const root = this.store.get('messages', rootId);
    if (!root) throw new HttpError(404, 'message not found');
    this.membership(actor, root.workspace_id);
    if (root.thread_root_id !== root.id) throw new HttpError(400, 'nested thread replies are not supported');
    const text = str(body, 'body');
    const nonce = optStr(body, 'nonce');
    this.checkNonce(nonce);
    if (nonce !== undefined) {
      const prior = this.byNonce(actor.user.id, nonce);
      if (prior) {
        if (prior.body !== text) throw new HttpError(400, 'client nonce was already used for a different message');
        return ok({ message: this.messageView(prior), thread_state: this.threadState(this.store.get('messages', prior.thread_root_id)!), events: [] });
      }
    }
    const now = new Date().toISOString();
    const id = this.store.newId('msg');
    const message = this.store.put('messages', {
      id,
      workspace_id: root.workspace_id,
      channel_id: root.channel_id,
      author_id: actor.user.id,
      body: text,
      nonce: nonce ?? null,
      kind: 'message',
      turn_id: null,
      quoted_message_id: optStr(body, 'quoted_message_id') ?? null,
      thread_root_id: root.id,
      channel_seq: null,
      created_at: now,
      reply_count: 0,
      last_reply_at: null,
    });
    const updatedRoot = this.store.put('messages', { ...root, reply_count: root.reply_count + 1, last_reply_at: now });
    const replied = this.publish({
      type: 'thread.reply_created',
      workspace_id: root.workspace_id,
      channel_id: root.channel_id,
      seq: null,
      payload: { message_id: id, root_message_id: root.id, ...(nonce !== undefined ? { nonce } : {}), correlation_id: correlationId },
      mentioned_user_ids: this.mentions(root.workspace_id, text),
    });
    const state = this.publish({
      type: 'thread.state_updated',
      workspace_id: root.workspace_id,
      channel_id: root.channel_id,
      seq: null,
      payload: { root_message_id: root.id },
      mentioned_user_ids: [],
    });
    return ok({ message: this.messageView(message), thread_state: this.threadState(updatedRoot), events: [this.eventView(replied), this.eventView(state)] }, 201);
  }

  getMessage(actor: Actor, id: string): Reply {
    this.need(actor, 'messages:read');
    const message = this.store.get('messages', id);
    if (!message) throw new HttpError(404, 'message not found');
    this.membership(actor, message.workspace_id);
    return ok({ message: this.messageView(message) });
  }

  messageByNonce(actor: Actor, query: URLSearchParams): Reply {
    this.need(actor, 'messages:read');
    const ws = query.get('workspace_id');
    const nonce = query.get('nonce');
    if (!ws || !nonce) throw new HttpError(400, 'workspace_id and nonce are required');
    this.membership(actor, ws);
    const message = this.byNonce(actor.user.id, nonce);
    if (!message || message.workspace_id !== ws) throw new HttpError(404, 'message not found');
    return ok({ message: this.messageView(message) });
  }

  listMessages(actor: Actor, channelId: string, query: URLSearchParams): Reply {
    this.need(actor, 'messages:read');
    const channel = this.channelOf(actor, channelId);
    const limit = query.has('limit') ? Number(query.get('limit')) : 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new HttpError(400, 'limit must be between 1 and 200');
    const anchors = ['after_seq', 'before_seq', 'around_seq'].filter((k) => query.has(k));
    if (anchors.length > 1 || (anchors.length === 1 && query.get('mode') === 'latest')) {
      throw new HttpError(400, 'after_seq, before_seq, around_seq and mode=latest are mutually exclusive');
    }
    const roots = this.store
      .all('messages')
      .filter((m) => m.channel_id === channel.id && m.channel_seq !== null)
      .sort((a, b) => a.channel_seq! - b.channel_seq!);
    const seqOf = (k: string) => {
      const v = Number(query.get(k));
      if (!Number.isInteger(v) || v < 0) throw new HttpError(400, `${k} must be a non-negative integer`);
      return v;
    };
    let page: MessageRow[];
    if (anchors[0] === 'after_seq') {
      const after = seqOf('after_seq');
      page = roots.filter((m) => m.channel_seq! > after).slice(0, limit);
    } else if (anchors[0] === 'before_seq') {
      const before = seqOf('before_seq');
      page = roots.filter((m) => m.channel_seq! < before).slice(-limit);
    } else if (anchors[0] === 'around_seq') {
      const around = seqOf('around_seq');
      const at = roots.findIndex((m) => m.channel_seq! >= around);
      const centre = at === -1 ? roots.length : at;
      const start = Math.max(0, centre - Math.floor(limit / 2));
      page = roots.slice(start, start + limit);
    } else {
      page = roots.slice(-limit);
    }
    const oldest = page[0]?.channel_seq ?? null;
    const newest = page.at(-1)?.channel_seq ?? null;
    return ok({
      messages: page.map((m) => this.messageView(m)),
      oldest_seq: oldest,
      newest_seq: newest,
      has_older: oldest !== null && roots.some((m) => m.channel_seq! < oldest),
      has_newer: newest !== null ? roots.some((m) => m.channel_seq! > newest) : false,
    });
  }

  getThread(actor: Actor, rootId: string, query: URLSearchParams): Reply {
    this.need(actor, 'threads:read');
    const root = this.store.get('messages', rootId);
    if (!root) throw new HttpError(404, 'message not found');
    this.membership(actor, root.workspace_id);
    if (root.thread_root_id !== root.id) throw new HttpError(400, 'not a thread root');
    const limit = query.has('limit') ? Number(query.get('limit')) : 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new HttpError(400, 'limit must be between 1 and 200');
    const replies = this.store
      .all('messages')
      .filter((m) => m.thread_root_id === root.id && m.id !== root.id)
      .sort((a, b) => (a.id < b.id ? -1 : 1));
    const page = query.get('latest') === 'true' ? replies.slice(-limit) : replies.slice(0, limit);
    return ok({ root: this.messageView(root), replies: page.map((m) => this.messageView(m)), thread_state: this.threadState(root) });
  }

  // ---------------------------------------------------------------- realtime pull

  /** Events of `workspaceId` visible to the caller, in cursor order. */
  visibleEvents(actor: Actor, workspaceId: string): EventRow[] {
    return this.store.events.filter((e) => e.workspace_id === workspaceId && this.isMember(actor.user.id, workspaceId));
  }

  pullEvents(actor: Actor, query: URLSearchParams): Reply {
    this.need(actor, 'realtime:read');
    const ws = query.get('workspace_id');
    if (!ws) throw new HttpError(400, 'workspace_id is required');
    this.membership(actor, ws);
    const rawLimit = Number(query.get('limit') ?? '200');
    const limit = Number.isInteger(rawLimit) && rawLimit >= 1 && rawLimit <= 500 ? rawLimit : 200;
    // The tail is captured before the page is read, so nothing made meanwhile falls between them.
    const visible = this.visibleEvents(actor, ws);
    const tail = query.get('include_tail') === 'true' ? visible.at(-1)?.cursor : undefined;
    const after = query.get('after_cursor');
    if (after && this.store.eventPosition(after) === undefined) throw new HttpError(400, 'unknown cursor; resync required');
    const events = (after ? visible.filter((e) => e.cursor > after) : visible).slice(0, limit);
    return ok({ events: events.map((e) => this.eventView(e)), ...(tail !== undefined ? { tail_cursor: tail } : {}) });
  }
}
