import { randomUUID } from 'node:crypto';
import { parseInput } from '@keelson/kit';
import type { EntityManager } from 'typeorm';
import type { MemoryDeps } from '../settings';
import { memoryEntrySchema, sessionIdSchema, sessionSettingsSchema, type MemoryEntry } from './memory.input';

/** Rows per INSERT statement when appending in bulk. */
const CHUNK = 2_000;

export interface AppendResult {
  /** The stored message's id (the earlier one's when the dedupe key was already stored). */
  id: string;
  conversationId: string;
  /** False when the dedupe key was already stored (or repeated earlier in the same batch). */
  inserted: boolean;
}

export interface ConversationKey {
  sessionKey: string;
  agent: string;
  channel?: string | null;
  taskId?: string | null;
  metadata?: Record<string, unknown> | null;
}

interface ConversationRow {
  id: string;
  session_key: string;
  agent: string;
}

const keyOf = (sessionKey: string, agent: string) => `${agent}\u0000${sessionKey}`;

/**
 * Memory's writes: appends (idempotent per conversation on the dedupe key), conversations, the
 * rotation breadcrumb and session settings. Every write can join a caller's transaction (capture
 * writes messages and its cursor in one).
 */
export class MemoryService {
  constructor(
    private readonly deps: MemoryDeps,
    /** Called after an append this service committed itself (not one in a caller's transaction). */
    private readonly onCommitted: () => void = () => {},
  ) {}

  /** `appendMemory`: validates, stores, returns the message id (the stored one for a repeated dedupe key). */
  async append(body: unknown): Promise<string> {
    const entry = parseInput(memoryEntrySchema, body, 'entry');
    const [result] = await this.appendMany([entry]);
    return result!.id;
  }

  /**
   * Stores messages in order, creating conversations as needed, with multi-row statements. A dedupe
   * key already stored in its conversation stores nothing and returns the stored id. Runs in
   * `manager`'s transaction when given, else in its own. Entries are trusted (validated at the edge).
   */
  async appendMany(entries: readonly MemoryEntry[], manager?: EntityManager): Promise<AppendResult[]> {
    if (!entries.length) return [];
    if (!manager) {
      const results = await this.deps.dataSource.transaction((m) => this.appendMany(entries, m));
      this.onCommitted();
      return results;
    }

    const conversations = await this.upsertConversations(
      manager,
      entries.map((e) => ({ sessionKey: e.sessionId, agent: e.agent, channel: e.channel, taskId: e.taskId })),
    );
    const results: AppendResult[] = [];
    for (let start = 0; start < entries.length; start += CHUNK) {
      const chunk = entries.slice(start, start + CHUNK);
      const rows = (await manager.query(
        `WITH input AS (
           SELECT * FROM unnest($1::int[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::timestamptz[])
             AS i(ord, conversation_id, dedupe_key, role, content, tool_calls, metadata, created_at)
         ), fresh AS (
           SELECT DISTINCT ON (i.conversation_id, i.dedupe_key) i.*
           FROM input i
           WHERE NOT EXISTS (
             SELECT 1 FROM memory_messages m WHERE m.conversation_id = i.conversation_id AND m.dedupe_key = i.dedupe_key
           )
           ORDER BY i.conversation_id, i.dedupe_key, i.ord
         ), numbered AS (
           SELECT f.*, c.agent, c.last_seq + row_number() OVER (PARTITION BY f.conversation_id ORDER BY f.ord) AS seq
           FROM fresh f JOIN memory_conversations c ON c.id = f.conversation_id
         ), ins AS (
           -- The conversation's agent, copied for search to filter on inside its indexes.
           INSERT INTO memory_messages (conversation_id, agent, seq, role, content, tool_calls, metadata, dedupe_key, created_at)
           SELECT conversation_id, agent, seq, role, content, tool_calls::jsonb, COALESCE(metadata::jsonb, '{}'::jsonb), dedupe_key,
                  COALESCE(created_at, now())
           FROM numbered ORDER BY ord
           ON CONFLICT (conversation_id, dedupe_key) DO NOTHING
           RETURNING id, conversation_id, dedupe_key, seq
         ), bumped AS (
           UPDATE memory_conversations c SET last_seq = s.max_seq, updated_at = now()
           FROM (SELECT conversation_id, max(seq) AS max_seq FROM ins GROUP BY conversation_id) s
           WHERE c.id = s.conversation_id
           RETURNING c.id
         )
         SELECT i.ord, i.conversation_id, COALESCE(ins.id, m.id)::text AS id, (ins.id IS NOT NULL AND f.ord = i.ord) AS inserted
         FROM input i
         LEFT JOIN fresh f ON f.conversation_id = i.conversation_id AND f.dedupe_key = i.dedupe_key
         LEFT JOIN ins ON ins.conversation_id = i.conversation_id AND ins.dedupe_key = i.dedupe_key
         LEFT JOIN memory_messages m ON m.conversation_id = i.conversation_id AND m.dedupe_key = i.dedupe_key
         ORDER BY i.ord`,
        [
          chunk.map((_, i) => i),
          chunk.map((e) => conversations.get(keyOf(e.sessionId, e.agent))!),
          chunk.map((e) => e.dedupeKey ?? randomUUID()),
          chunk.map((e) => e.role),
          chunk.map((e) => e.content),
          chunk.map((e) => (e.toolCalls == null ? null : JSON.stringify(e.toolCalls))),
          chunk.map((e) => (e.metadata == null ? null : JSON.stringify(e.metadata))),
          chunk.map((e) => e.createdAt ?? null),
        ],
      )) as { ord: number; conversation_id: string; id: string; inserted: boolean }[];
      for (const r of rows) results.push({ id: r.id, conversationId: r.conversation_id, inserted: r.inserted });
    }
    return results;
  }

  /**
   * Creates the conversations that do not exist yet (first writer's channel and task stick; later
   * ones fill what is still null) and locks them for the caller's transaction, in a fixed order so
   * concurrent appenders never deadlock. Returns each conversation's id by (session, agent).
   */
  async upsertConversations(manager: EntityManager, keys: readonly ConversationKey[]): Promise<Map<string, string>> {
    const unique = new Map<string, ConversationKey>();
    for (const k of keys) {
      const key = keyOf(k.sessionKey, k.agent);
      const seen = unique.get(key);
      if (!seen) unique.set(key, { ...k });
      else {
        seen.channel ??= k.channel;
        seen.taskId ??= k.taskId;
      }
    }
    const sorted = [...unique.values()].sort((a, b) =>
      a.sessionKey === b.sessionKey ? (a.agent < b.agent ? -1 : 1) : a.sessionKey < b.sessionKey ? -1 : 1,
    );
    const rows = (await manager.query(
      `INSERT INTO memory_conversations (id, session_key, agent, channel, task_id, metadata)
       SELECT id, session_key, agent, channel, task_id, COALESCE(metadata::jsonb, '{}'::jsonb)
       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
         AS u(id, session_key, agent, channel, task_id, metadata)
       ON CONFLICT (session_key, agent) DO UPDATE SET
         channel = COALESCE(memory_conversations.channel, EXCLUDED.channel),
         task_id = COALESCE(memory_conversations.task_id, EXCLUDED.task_id),
         metadata = EXCLUDED.metadata || memory_conversations.metadata
       RETURNING id, session_key, agent`,
      [
        sorted.map(() => randomUUID()),
        sorted.map((k) => k.sessionKey),
        sorted.map((k) => k.agent),
        sorted.map((k) => k.channel ?? null),
        sorted.map((k) => k.taskId ?? null),
        sorted.map((k) => (k.metadata ? JSON.stringify(k.metadata) : null)),
      ],
    )) as ConversationRow[];
    return new Map(rows.map((r) => [keyOf(r.session_key, r.agent), r.id]));
  }

  /**
   * The rotation breadcrumb: `sessionKey` is the session formerly known as `previousSessionKey`.
   * Durable across restarts (the registry's aliases are in memory only); the new id's conversation
   * inherits the old one's agent, channel and task. Idempotent.
   */
  async linkRotation(manager: EntityManager, sessionKey: string, previousSessionKey: string): Promise<void> {
    if (sessionKey === previousSessionKey) return;
    await manager.query(
      `INSERT INTO memory_session_links (session_key, previous_session_key) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
      [sessionKey, previousSessionKey],
    );
    const previous = (await manager.query(
      'SELECT agent, channel, task_id FROM memory_conversations WHERE session_key = $1 ORDER BY created_at, id',
      [previousSessionKey],
    )) as { agent: string; channel: string | null; task_id: string | null }[];
    if (previous.length) {
      await this.upsertConversations(
        manager,
        previous.map((p) => ({
          sessionKey,
          agent: p.agent,
          channel: p.channel,
          taskId: p.task_id,
          metadata: { rotatedFrom: previousSessionKey },
        })),
      );
    }
  }

  /** The agent of the session's first conversation, if it has one. */
  async agentOfSession(manager: EntityManager, sessionKey: string): Promise<string | undefined> {
    const rows = (await manager.query(
      'SELECT agent FROM memory_conversations WHERE session_key = $1 ORDER BY created_at, id LIMIT 1',
      [sessionKey],
    )) as { agent: string }[];
    return rows[0]?.agent;
  }

  /** `saveSessionSettings`: replaces the session's settings object. */
  async saveSessionSettings(sessionId: unknown, settings: unknown): Promise<boolean> {
    const id = parseInput(sessionIdSchema, sessionId, 'sessionId');
    const value = parseInput(sessionSettingsSchema, settings, 'settings');
    await this.deps.dataSource.query(
      `INSERT INTO memory_session_settings (session_key, settings) VALUES ($1, $2::jsonb)
       ON CONFLICT (session_key) DO UPDATE SET settings = EXCLUDED.settings, updated_at = now()`,
      [id, JSON.stringify(value)],
    );
    return true;
  }

  /** Settings per session id, in order (null where none were saved). */
  async sessionSettings(sessionIds: readonly string[]): Promise<(Record<string, unknown> | null)[]> {
    const rows = (await this.deps.dataSource.query(
      'SELECT session_key, settings FROM memory_session_settings WHERE session_key = ANY($1::text[])',
      [sessionIds],
    )) as { session_key: string; settings: Record<string, unknown> }[];
    const byKey = new Map(rows.map((r) => [r.session_key, r.settings]));
    return sessionIds.map((id) => byKey.get(id) ?? null);
  }
}
