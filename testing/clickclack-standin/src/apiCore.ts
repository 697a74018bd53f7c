// The stand-in's shared core: who a request acts as, membership, the views, sessions, workspaces and channels.
import type { IncomingMessage } from 'node:http';
import { createMagicLink } from './admin';
import { hashSecret, secret } from './ids';
import { HttpError, isLocalRequest, ok, optStr, requiredField, type Reply } from './http';
import type { BotTokenRow, ChannelRow, EventRow, StandinMessageRow, Role, StandinStore, UserRow, WorkspaceRow } from './store';

/** Who a request acts as (SWARM.md §1.2 `currentActor`). */
export interface StandinActor {
  user: UserRow;
  /** Scopes of a bot token; humans act with every scope. */
  scopes: ReadonlySet<string> | 'all';
  /** A bot token is bound to one workspace. */
  tokenWorkspaceId?: string;
  tokenId?: string;
}

/** Observed body of a 401 for a bad, unknown or revoked bearer. */
export const REVOKED_BODY = 'sql: no rows in result set';

export const HANDLE = /^[a-z0-9][a-z0-9_-]{1,31}$/;
export const MENTION = /@([a-z0-9][a-z0-9_-]{1,31})/gi;
export { MAGIC_TTL_MS } from './admin';
export const SESSION_TTL_MS = 30 * 24 * 60 * 60 * 1000;
export const MESSAGE_KINDS = new Set(['message', 'agent_commentary', 'agent_tool']);
/** Text that is not valid UTF-16, hence not encodable as UTF-8. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

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

/** The core of the stand-in API: actors, scopes, views, sessions, workspaces and channels. */
export class StandinCore {
  protected realtime: RealtimeHooks | undefined;

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
  actor(req: IncomingMessage, bearer?: string): StandinActor {
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

  actorOfToken(token: string): StandinActor {
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

  protected firstUser(): UserRow | undefined {
    return this.store
      .all('users')
      .filter((u) => u.kind === 'human' && !u.deleted_at)
      .sort((a, b) => a.id.localeCompare(b.id))[0];
  }

  need(actor: StandinActor, scope: string): void {
    if (actor.scopes !== 'all' && !actor.scopes.has(scope)) throw new HttpError(403, `bot token is missing scope ${scope}`);
  }

  /** The caller's role in `workspaceId` (a bot token must be bound to it); 403 otherwise. */
  membership(actor: StandinActor, workspaceId: string): Role {
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

  messageView(m: StandinMessageRow): Record<string, unknown> {
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

  protected threadState(root: StandinMessageRow): Record<string, unknown> {
    return { root_message_id: root.id, reply_count: root.reply_count, last_reply_at: root.last_reply_at };
  }

  eventView(e: EventRow | (Omit<EventRow, 'cursor'> & { cursor: '' })): Record<string, unknown> {
    return { ...e };
  }

  // ---------------------------------------------------------------- auth routes

  magicRequest(req: IncomingMessage, body: Record<string, unknown>): Reply {
    if (!this.options.devBootstrap) throw new HttpError(501, 'magic link request requires dev auth');
    if (!isLocalRequest(req)) throw new HttpError(403, 'magic link request is only available from loopback');
    const email = requiredField(body, 'email').trim().toLowerCase();
    const user = this.store.all('users').find((u) => u.kind === 'human' && u.email === email && !u.deleted_at);
    if (!user) throw new HttpError(404, 'user not found');
    const link = createMagicLink(this.store, user);
    return ok({ magic_link: { id: link.id, email, created_at: link.createdAt, expires_at: link.expiresAt }, token: link.token }, 201);
  }

  magicConsume(req: IncomingMessage, body: Record<string, unknown>): Reply {
    const type = req.headers['content-type'] ?? '';
    if (!/^application\/json\b/i.test(type)) throw new HttpError(415, 'Content-Type must be application/json');
    const origin = req.headers.origin;
    if (origin && req.headers.host && new URL(origin).host !== req.headers.host) throw new HttpError(403, 'cross-site request refused');
    const token = requiredField(body, 'token');
    const hash = hashSecret(token);
    const find = () => this.store.all('magicLinks').find((l) => l.token_hash === hash);
    // A link `admin magic-link create` wrote to the data directory after this server read it.
    if (!find()) {
      this.store.reload('users');
      this.store.reload('magicLinks');
    }
    const link = find();
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

  me(actor: StandinActor): Reply {
    this.need(actor, 'profile:read');
    return ok({ user: this.userView(actor.user) });
  }

  // ---------------------------------------------------------------- workspaces

  protected workspaceView(w: WorkspaceRow): Record<string, unknown> {
    return { ...w };
  }

  listWorkspaces(actor: StandinActor): Reply {
    this.need(actor, 'workspaces:read');
    const ids = this.store
      .all('members')
      .filter((m) => m.user_id === actor.user.id && !m.removed_at)
      .map((m) => m.workspace_id)
      .filter((id) => actor.tokenWorkspaceId === undefined || id === actor.tokenWorkspaceId);
    return ok({ workspaces: ids.map((id) => this.workspaceView(this.store.get('workspaces', id)!)) });
  }

  getWorkspace(actor: StandinActor, ws: string): Reply {
    this.need(actor, 'workspaces:read');
    this.membership(actor, ws);
    return ok({ workspace: this.workspaceView(this.store.get('workspaces', ws)!) });
  }

  createWorkspace(actor: StandinActor, body: Record<string, unknown>): Reply {
    if (actor.user.kind !== 'human') throw new HttpError(403, 'bot tokens cannot create workspaces');
    const name = requiredField(body, 'name');
    const slug = requiredField(body, 'slug');
    if (this.store.all('workspaces').some((w) => w.slug === slug)) throw new HttpError(409, 'workspace slug already exists');
    const ws = this.store.put('workspaces', { id: this.store.newId('wsp'), name, slug, created_at: new Date().toISOString() });
    this.store.put('members', { id: `${ws.id}:${actor.user.id}`, workspace_id: ws.id, user_id: actor.user.id, role: 'owner', removed_at: null });
    return ok({ workspace: this.workspaceView(ws) }, 201);
  }

  // ---------------------------------------------------------------- channels

  protected channelView(c: ChannelRow): Record<string, unknown> {
    return { id: c.id, workspace_id: c.workspace_id, name: c.name, display_title: c.display_title, kind: c.kind, created_at: c.created_at };
  }

  listChannels(actor: StandinActor, ws: string): Reply {
    this.need(actor, 'channels:read');
    this.membership(actor, ws);
    return ok({ channels: this.store.all('channels').filter((c) => c.workspace_id === ws).map((c) => this.channelView(c)) });
  }

  createChannel(actor: StandinActor, ws: string, body: Record<string, unknown>): Reply {
    this.need(actor, 'channels:write');
    const role = this.membership(actor, ws);
    if (role === 'guest') throw new HttpError(403, 'guests cannot create channels');
    const name = requiredField(body, 'name').trim();
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

  channelOf(actor: StandinActor, channelId: string): ChannelRow {
    const channel = this.store.get('channels', channelId);
    if (!channel) throw new HttpError(404, 'channel not found');
    this.membership(actor, channel.workspace_id);
    return channel;
  }

  protected publish(e: Omit<EventRow, 'id' | 'cursor' | 'created_at'>): EventRow {
    const event = this.store.appendEvent(e);
    this.realtime?.published(event);
    return event;
  }
}
