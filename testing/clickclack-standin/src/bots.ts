import { hashSecret, secret } from './ids';
import { HttpError, ok, optStr, requiredField, type Reply } from './http';
import { expandScopes } from './scopes';
import type { BotTokenRow } from './store';
import { HANDLE, StandinCore, type StandinActor } from './apiCore';

/** The stand-in's service bots and their tokens (SWARM.md §1.2). */
export class StandinBots extends StandinCore {
  // ---------------------------------------------------------------- bots

  protected requireBotManager(actor: StandinActor, ws: string): void {
    if (actor.user.kind !== 'human') throw new HttpError(403, 'bot tokens cannot create bots');
    const role = this.membership(actor, ws);
    if (role !== 'owner' && role !== 'moderator') throw new HttpError(403, 'only an owner or moderator can manage service bots');
  }

  protected scopesOf(body: Record<string, unknown>): string[] {
    const raw = body.scopes;
    if (!Array.isArray(raw) || raw.length === 0 || !raw.every((s) => typeof s === 'string')) throw new HttpError(400, 'scopes must be a non-empty list of scopes');
    const expanded = expandScopes(raw as string[]);
    if ('unknown' in expanded) throw new HttpError(400, `unknown scope ${expanded.unknown}`);
    return expanded.scopes;
  }

  protected mintToken(botId: string, ws: string, name: string, scopes: string[], setupNonce: string | null): { row: BotTokenRow; plaintext: string } {
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
  protected rotate(row: BotTokenRow): string {
    const plaintext = secret('ccb');
    this.store.put('botTokens', { ...row, token_hash: hashSecret(plaintext) });
    this.realtime?.tokenRevoked(row.id); // the old plaintext no longer authenticates anything
    return plaintext;
  }

  createBot(actor: StandinActor, ws: string, body: Record<string, unknown>): Reply {
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
    const handle = requiredField(body, 'handle');
    if (!HANDLE.test(handle)) throw new HttpError(400, 'handle must match ^[a-z0-9][a-z0-9_-]{1,31}$');
    if (this.store.all('users').some((u) => u.handle === handle && !u.deleted_at)) throw new HttpError(409, 'handle is already taken');
    const scopes = this.scopesOf(body);
    const displayName = requiredField(body, 'display_name');
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

  createBotToken(actor: StandinActor, ws: string, botId: string, body: Record<string, unknown>): Reply {
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
    const minted = this.mintToken(botId, ws, requiredField(body, 'name'), this.scopesOf(body), setupNonce ?? null);
    return ok({ bot_token: this.tokenView(minted.row, minted.plaintext) }, 201);
  }

  revokeBotToken(actor: StandinActor, tokenId: string): Reply {
    const row = this.store.get('botTokens', tokenId);
    if (!row) throw new HttpError(404, 'bot token not found');
    this.requireBotManager(actor, row.workspace_id);
    const revoked = row.revoked_at ? row : this.store.put('botTokens', { ...row, revoked_at: new Date().toISOString() });
    this.realtime?.tokenRevoked(tokenId);
    return ok({ bot_token: this.tokenView(revoked) });
  }

  deleteBot(actor: StandinActor, botId: string): Reply {
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
  listBots(actor: StandinActor, ws: string): Reply {
    this.requireBotManager(actor, ws);
    const ids = new Set(this.store.all('members').filter((m) => m.workspace_id === ws && m.role === 'bot').map((m) => m.user_id));
    const bots = this.store
      .all('users')
      .filter((u) => ids.has(u.id))
      .map((u) => ({ ...this.userView(u), tokens: this.store.all('botTokens').filter((t) => t.bot_id === u.id).map((t) => this.tokenView(t)) }));
    return ok({ bots });
  }

}
