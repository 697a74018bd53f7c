import type { BusMessage, BusUser } from '@keelson/rib-swarm';
import { z } from 'zod';

export type { BusMessage, BusUser };

/**
 * ClickClack's wire shapes as the swarm reads them (SWARM.md §1), parsed at the edge. Readers are
 * lenient about fields they do not use, so a newer server's additions never break them.
 */

const nullableString = z.string().nullish().transform((v) => v ?? null);

export const wireUserSchema = z.looseObject({
  id: z.string(),
  kind: z.enum(['human', 'bot']).catch('human'),
  display_name: z.string().nullish(),
  handle: nullableString,
  former_handle: nullableString,
  /** Present on a bot where the bot's record and its user row differ. */
  bot_user_id: z.string().optional(),
});

export const wireMessageSchema = z.looseObject({
  id: z.string(),
  workspace_id: z.string().optional(),
  channel_id: z.string().nullish(),
  author_id: z.string().optional(),
  author: wireUserSchema.nullish(),
  body: z.string().default(''),
  nonce: nullableString,
  kind: z.string().default('message'),
  thread_root_id: nullableString,
  channel_seq: z.number().int().nullish(),
  created_at: z.string().optional(),
  thread_state: z.looseObject({ reply_count: z.number().int().optional() }).nullish(),
});

export const wireEventSchema = z.looseObject({
  id: z.string().default(''),
  cursor: z.string().default(''),
  type: z.string(),
  workspace_id: z.string().optional(),
  channel_id: nullableString,
  seq: z.number().int().nullish(),
  created_at: z.string().optional(),
  payload: z.record(z.string(), z.unknown()).default({}),
  mentioned_user_ids: z.array(z.string()).default([]),
});

export const wireTokenSchema = z.looseObject({
  id: z.string(),
  token: z.string().optional(),
  scopes: z.array(z.string()).optional(),
  revoked_at: nullableString,
});

/** A durable (or live-only, `cursor: ""`) realtime event: ids, never bodies. */
export interface BusEvent {
  id: string;
  cursor: string;
  type: string;
  workspaceId: string | null;
  channelId: string | null;
  seq: number | null;
  payload: Record<string, unknown>;
  mentionedUserIds: string[];
}

export function toUser(raw: z.infer<typeof wireUserSchema>): BusUser {
  return {
    id: raw.bot_user_id ?? raw.id,
    kind: raw.kind,
    // A real server answers "" for a user without a handle (the owner): that is no handle.
    handle: raw.handle || raw.former_handle || null,
    displayName: raw.display_name || raw.handle || raw.id,
  };
}

export function toBusMessage(raw: unknown): BusMessage {
  const m = wireMessageSchema.parse(raw);
  const author = m.author ? toUser(m.author) : null;
  return {
    id: m.id,
    channelId: m.channel_id ?? null,
    authorId: m.author_id ?? author?.id ?? '',
    author,
    body: m.body,
    nonce: m.nonce,
    kind: m.kind,
    threadRootId: m.thread_root_id ?? m.id,
    channelSeq: m.channel_seq ?? null,
    createdAt: m.created_at ?? null,
    replyCount: m.thread_state?.reply_count ?? 0,
  };
}

export function toEvent(raw: unknown): BusEvent {
  const e = wireEventSchema.parse(raw);
  return {
    id: e.id,
    cursor: e.cursor,
    type: e.type,
    workspaceId: e.workspace_id ?? null,
    channelId: e.channel_id,
    seq: e.seq ?? null,
    payload: e.payload,
    mentionedUserIds: e.mentioned_user_ids,
  };
}
