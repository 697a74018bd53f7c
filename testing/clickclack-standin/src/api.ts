import { HttpError, ok, optStr, requiredField, type Reply } from './http';
import type { EventRow, StandinMessageRow } from './store';
import { LONE_SURROGATE, MENTION, MESSAGE_KINDS, type StandinActor } from './apiCore';
import { StandinBots } from './bots';

export { REVOKED_BODY, versionAtLeast } from './apiCore';
export type { StandinActor, RealtimeHooks, StandinOptions } from './apiCore';

/**
 * ClickClack's HTTP API as SWARM.md records it: the owner bootstrap, magic-link sessions, service
 * bots and their tokens, channels, messages with author-scoped nonces, threads, and the durable
 * event log. Routes and behaviours SWARM.md does not record are not here (they answer 404).
 */
export class StandinApi extends StandinBots {
  // ---------------------------------------------------------------- messages

  private checkNonce(nonce: string | undefined): void {
    if (nonce === undefined) return;
    if ([...nonce].length > 128 || nonce.includes('\u0000') || LONE_SURROGATE.test(nonce)) {
      throw new HttpError(400, 'nonce must be at most 128 runes of valid UTF-8 without NUL');
    }
  }

  private byNonce(authorId: string, nonce: string): StandinMessageRow | undefined {
    return this.store.all('messages').find((m) => m.author_id === authorId && m.nonce === nonce);
  }

  /** The author's earlier message with this nonce (a retry answers it again); the nonce on another text is 400. */
  private retried(actor: StandinActor, nonce: string | undefined, text: string): StandinMessageRow | undefined {
    if (nonce === undefined) return undefined;
    const prior = this.byNonce(actor.user.id, nonce);
    if (prior && prior.body !== text) throw new HttpError(400, 'client nonce was already used for a different message');
    return prior;
  }

  /** Stores a new message of the actor: a channel post or a thread reply, as `place` says. */
  private putMessage(
    actor: StandinActor,
    body: Record<string, unknown>,
    text: string,
    nonce: string | undefined,
    place: Pick<StandinMessageRow, 'id' | 'workspace_id' | 'channel_id' | 'kind' | 'turn_id' | 'thread_root_id' | 'channel_seq' | 'created_at'>,
  ): StandinMessageRow {
    const { id, workspace_id, channel_id, kind, turn_id, thread_root_id, channel_seq, created_at } = place;
    return this.store.put('messages', {
      id,
      workspace_id,
      channel_id,
      author_id: actor.user.id,
      body: text,
      nonce: nonce ?? null,
      kind,
      turn_id,
      quoted_message_id: optStr(body, 'quoted_message_id') ?? null,
      thread_root_id,
      channel_seq,
      created_at,
      reply_count: 0,
      last_reply_at: null,
    });
  }

  private mentions(workspaceId: string, body: string): string[] {
    const handles = new Set([...body.matchAll(MENTION)].map((m) => m[1]!.toLowerCase()));
    if (handles.size === 0) return [];
    return this.store
      .all('users')
      .filter((u) => u.handle !== null && handles.has(u.handle) && !u.deleted_at && this.isMember(u.id, workspaceId))
      .map((u) => u.id);
  }

  postMessage(actor: StandinActor, channelId: string, body: Record<string, unknown>, correlationId: string): Reply {
    this.need(actor, 'messages:write');
    const channel = this.channelOf(actor, channelId);
    const text = requiredField(body, 'body');
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
    const prior = this.retried(actor, nonce, text);
    if (prior) return ok({ message: this.messageView(prior), event: null });
    const seq = channel.last_seq + 1;
    this.store.put('channels', { ...channel, last_seq: seq });
    const id = this.store.newId('msg');
    const message = this.putMessage(actor, body, text, nonce, {
      id,
      workspace_id: channel.workspace_id,
      channel_id: channel.id,
      kind,
      turn_id: turnId,
      thread_root_id: id,
      channel_seq: seq,
      created_at: new Date().toISOString(),
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

  replyInThread(actor: StandinActor, rootId: string, body: Record<string, unknown>, correlationId: string): Reply {
    this.need(actor, 'threads:write');
    const root = this.store.get('messages', rootId);
    if (!root) throw new HttpError(404, 'message not found');
    this.membership(actor, root.workspace_id);
    if (root.thread_root_id !== root.id) throw new HttpError(400, 'nested thread replies are not supported');
    const text = requiredField(body, 'body');
    const nonce = optStr(body, 'nonce');
    this.checkNonce(nonce);
    const prior = this.retried(actor, nonce, text);
    if (prior) return ok({ message: this.messageView(prior), thread_state: this.threadState(this.store.get('messages', prior.thread_root_id)!), events: [] });
    const now = new Date().toISOString();
    const id = this.store.newId('msg');
    const message = this.putMessage(actor, body, text, nonce, {
      id,
      workspace_id: root.workspace_id,
      channel_id: root.channel_id,
      kind: 'message',
      turn_id: null,
      thread_root_id: root.id,
      channel_seq: null,
      created_at: now,
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

  getMessage(actor: StandinActor, id: string): Reply {
    this.need(actor, 'messages:read');
    const message = this.store.get('messages', id);
    if (!message) throw new HttpError(404, 'message not found');
    this.membership(actor, message.workspace_id);
    return ok({ message: this.messageView(message) });
  }

  messageByNonce(actor: StandinActor, query: URLSearchParams): Reply {
    this.need(actor, 'messages:read');
    const ws = query.get('workspace_id');
    const nonce = query.get('nonce');
    if (!ws || !nonce) throw new HttpError(400, 'workspace_id and nonce are required');
    this.membership(actor, ws);
    const message = this.byNonce(actor.user.id, nonce);
    if (!message || message.workspace_id !== ws) throw new HttpError(404, 'message not found');
    return ok({ message: this.messageView(message) });
  }

  listMessages(actor: StandinActor, channelId: string, query: URLSearchParams): Reply {
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
    let page: StandinMessageRow[];
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

  getThread(actor: StandinActor, rootId: string, query: URLSearchParams): Reply {
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
  visibleEvents(actor: StandinActor, workspaceId: string): EventRow[] {
    return this.store.events.filter((e) => e.workspace_id === workspaceId && this.isMember(actor.user.id, workspaceId));
  }

  pullEvents(actor: StandinActor, query: URLSearchParams): Reply {
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
