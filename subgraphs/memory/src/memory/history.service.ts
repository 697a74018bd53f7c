import { isUuid } from '@keelson/schema';
import { In } from 'typeorm';
import { Conversation } from '../conversation/conversation.entity';
import { MESSAGE_COLUMNS, toMessage, type MemoryMessage, type MessageRow } from '../message/message.entity';
import type { MemoryDeps } from '../settings';

/** How far back a rotation chain is followed (a chain longer than this is a loop or a bug). */
const MAX_ROTATIONS = 16;

export interface HistoryRequest {
  /** A SessionId (sessionHistory) or a task id (taskHistory). */
  id: string;
  limit: number;
}

export interface PageRequest {
  conversationId: string;
  /** Messages with a larger seq; 0 = from the start. */
  afterSeq: number;
  first: number;
}

export interface MessagePage {
  messages: MemoryMessage[];
  hasNextPage: boolean;
}

type KeyedRow = MessageRow & { idx: string | number };

function grouped(count: number, rows: KeyedRow[]): MemoryMessage[][] {
  const out: MemoryMessage[][] = Array.from({ length: count }, () => []);
  for (const row of rows) out[Number(row.idx) - 1]!.push(toMessage(row));
  return out;
}

/**
 * Memory's reads, each one SQL statement for any number of keys (DataLoader batches call them).
 * Histories are the newest `limit` messages, returned oldest first.
 */
export class HistoryService {
  constructor(private readonly deps: MemoryDeps) {}

  private get db() {
    return this.deps.dataSource;
  }

  conversationsByIds(ids: readonly string[]): Promise<Conversation[]> {
    return this.db.getRepository(Conversation).findBy({ id: In(ids.filter(isUuid)) });
  }

  /** Per session id, its conversation (the oldest one when several agents share the session), or null. */
  async conversationsOfSessions(sessionIds: readonly string[]): Promise<(Conversation | null)[]> {
    const found = await this.db
      .getRepository(Conversation)
      .createQueryBuilder('c')
      .distinctOn(['c.session_key'])
      .where('c.session_key = ANY(:keys)', { keys: [...sessionIds] })
      .orderBy('c.session_key')
      .addOrderBy('c.created_at')
      .addOrderBy('c.id')
      .getMany();
    const byKey = new Map(found.map((c) => [c.sessionKey, c]));
    return sessionIds.map((id) => byKey.get(id) ?? null);
  }

  /**
   * Per request, the session's newest messages across every agent's conversation of it and of the
   * ids it rotated from (the durable breadcrumb), oldest first.
   */
  async sessionHistories(requests: readonly HistoryRequest[]): Promise<MemoryMessage[][]> {
    if (!requests.length) return [];
    const rows = (await this.db.query(
      `WITH RECURSIVE req AS (
         SELECT * FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS r(session_key, lim, idx)
       ), chain AS (
         SELECT idx, session_key AS key, 0 AS depth FROM req
         UNION
         SELECT ch.idx, l.previous_session_key, ch.depth + 1
         FROM chain ch JOIN memory_session_links l ON l.session_key = ch.key
         WHERE ch.depth < $3
       )
       SELECT r.idx, h.* FROM req r CROSS JOIN LATERAL (
         SELECT ${MESSAGE_COLUMNS}
         FROM memory_messages m JOIN memory_conversations c ON c.id = m.conversation_id
         WHERE c.session_key IN (SELECT key FROM chain WHERE chain.idx = r.idx)
         ORDER BY m.created_at DESC, m.seq DESC, m.id DESC
         LIMIT r.lim
       ) h
       ORDER BY r.idx, h.created_at, h.seq, h.id`,
      [requests.map((r) => r.id), requests.map((r) => r.limit), MAX_ROTATIONS],
    )) as KeyedRow[];
    return grouped(requests.length, rows);
  }

  /**
   * Per request, the task's newest messages across the conversations stamped with its id and the
   * legacy ones keyed `task:<id>`, oldest first.
   */
  async taskHistories(requests: readonly HistoryRequest[]): Promise<MemoryMessage[][]> {
    if (!requests.length) return [];
    const rows = (await this.db.query(
      `WITH req AS (SELECT * FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS r(task_id, lim, idx))
       SELECT r.idx, h.* FROM req r CROSS JOIN LATERAL (
         SELECT ${MESSAGE_COLUMNS}
         FROM memory_messages m JOIN memory_conversations c ON c.id = m.conversation_id
         WHERE c.id IN (
           SELECT id FROM memory_conversations WHERE task_id = r.task_id
           UNION
           SELECT id FROM memory_conversations WHERE session_key = 'task:' || r.task_id
         )
         ORDER BY m.created_at DESC, m.seq DESC, m.id DESC
         LIMIT r.lim
       ) h
       ORDER BY r.idx, h.created_at, h.seq, h.id`,
      [requests.map((r) => r.id), requests.map((r) => r.limit)],
    )) as KeyedRow[];
    return grouped(requests.length, rows);
  }

  /** Per request, a page of a conversation's messages in seq order (one row more tells hasNextPage). */
  async messagePages(requests: readonly PageRequest[]): Promise<MessagePage[]> {
    if (!requests.length) return [];
    const rows = (await this.db.query(
      `WITH req AS (SELECT * FROM unnest($1::uuid[], $2::int8[], $3::int[]) WITH ORDINALITY AS r(conversation_id, after_seq, lim, idx))
       SELECT r.idx, h.* FROM req r CROSS JOIN LATERAL (
         SELECT ${MESSAGE_COLUMNS}
         FROM memory_messages m JOIN memory_conversations c ON c.id = m.conversation_id
         WHERE m.conversation_id = r.conversation_id AND m.seq > r.after_seq
         ORDER BY m.seq
         LIMIT r.lim + 1
       ) h
       ORDER BY r.idx, h.seq`,
      [requests.map((r) => r.conversationId), requests.map((r) => r.afterSeq), requests.map((r) => r.first)],
    )) as KeyedRow[];
    return grouped(requests.length, rows).map((messages, i) => {
      const first = requests[i]!.first;
      return { messages: messages.slice(0, first), hasNextPage: messages.length > first };
    });
  }

  /** The agent's newest messages across its conversations, newest first. */
  async recentMessages(agent: string, limit: number): Promise<MemoryMessage[]> {
    const rows = (await this.db.query(
      `SELECT ${MESSAGE_COLUMNS}
       FROM memory_messages m JOIN memory_conversations c ON c.id = m.conversation_id
       WHERE c.id IN (SELECT id FROM memory_conversations WHERE agent = $1 ORDER BY updated_at DESC LIMIT 8)
       ORDER BY m.created_at DESC, m.seq DESC, m.id DESC
       LIMIT $2`,
      [agent, limit],
    )) as MessageRow[];
    return rows.map(toMessage);
  }
}
