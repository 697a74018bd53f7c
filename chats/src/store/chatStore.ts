import { rows, type EventLog } from '@keelson/platform';
import { MeshError, streams, type Caller, type ChatCommandEffect, type ChatEventPayload, type ChatEventType, type ChatRole, type ChatStatus } from '@keelson/schema';
import type { DataSource, EntityManager } from 'typeorm';

/** A chat as `startChat` registers it. */
export interface NewChat {
  id: string;
  title: string;
  ribId: string | null;
  agent: string | null;
  projectId: string | null;
  systemPrompt: string | null;
  provider: string | null;
  model: string | null;
  /** The tools its turns may use (the rib's own, when it has one). */
  tools: string[];
  /** Who started it: its turns' tools act as this caller. */
  startedBy: Caller | null;
  temporalWorkflowId: string;
}

export interface ChatRecord extends NewChat {
  seq: number;
  status: ChatStatus;
  /** The provider session the next turn resumes. */
  sessionId: string | null;
  turns: number;
  turnInFlight: string | null;
  error: string | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface ChatMessageRecord {
  id: string;
  chatId: string;
  seq: number;
  turnId: string;
  role: ChatRole;
  text: string;
  createdAt: Date;
}

/** How a turn settled. */
export interface ChatTurnOutcome {
  status: 'ok' | 'error' | 'aborted' | 'timeout';
  text: string;
  error?: string;
  sessionId?: string;
  /** The assistant message's id (made by the caller, so a retried recording writes it once). */
  messageId: string;
}

interface ChatRow {
  id: string;
  seq: string;
  title: string;
  rib_id: string | null;
  agent: string | null;
  project_id: string | null;
  system_prompt: string | null;
  provider: string | null;
  model: string | null;
  tools: string[];
  status: ChatStatus;
  session_id: string | null;
  turns: number;
  turn_in_flight: string | null;
  error: string | null;
  started_by: Caller | null;
  temporal_workflow_id: string;
  created_at: Date;
  updated_at: Date;
}

interface MessageRow {
  id: string;
  chat_id: string;
  seq: number;
  turn_id: string;
  role: ChatRole;
  text: string;
  created_at: Date;
}

const COLUMNS =
  'id, seq, title, rib_id, agent, project_id, system_prompt, provider, model, tools, status, session_id, turns, turn_in_flight, error, started_by, temporal_workflow_id, created_at, updated_at';

const toRecord = (r: ChatRow): ChatRecord => ({
  id: r.id,
  seq: Number(r.seq),
  title: r.title,
  ribId: r.rib_id,
  agent: r.agent,
  projectId: r.project_id,
  systemPrompt: r.system_prompt,
  provider: r.provider,
  model: r.model,
  tools: r.tools,
  status: r.status,
  sessionId: r.session_id,
  turns: r.turns,
  turnInFlight: r.turn_in_flight,
  error: r.error,
  startedBy: r.started_by,
  temporalWorkflowId: r.temporal_workflow_id,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

const toMessage = (r: MessageRow): ChatMessageRecord => ({ id: r.id, chatId: r.chat_id, seq: r.seq, turnId: r.turn_id, role: r.role, text: r.text, createdAt: r.created_at });

/** The chat's rib and agent, as its CHAT_MESSAGE events carry them (memory files the message under them). */
const whose = (r: { rib_id: string | null; agent: string | null }) => ({ ...(r.rib_id ? { ribId: r.rib_id } : {}), ...(r.agent ? { agent: r.agent } : {}) });

/** Postgres text cannot hold NUL. */
const pgText = (s: string) => (s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s);

/**
 * The longest text an event carries: a message whole (memory captures it from its CHAT_MESSAGE, up to
 * memory's own bound), a delta, tool result or steer note up to 16,000 characters.
 */
const MESSAGE_EVENT_CHARS = 200_000;
const LIVE_EVENT_CHARS = 16_000;
const clip = (s: string, max: number) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/**
 * The one writer of chat state: the `chats` row, its `chat_messages`, and the `chats` stream of events
 * (key = chat id), each change and its events in one transaction. Opening and settling a turn are
 * idempotent by the turn's and the messages' ids, so a retried activity writes nothing twice.
 */
export class ChatStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly events: EventLog,
  ) {}

  private append(m: EntityManager, chatId: string, type: ChatEventType, payload: ChatEventPayload): Promise<unknown> {
    const max = type === 'CHAT_MESSAGE' ? MESSAGE_EVENT_CHARS : LIVE_EVENT_CHARS;
    return this.events.append<ChatEventPayload>(m, { stream: streams.chats, key: chatId, type, payload: payload.text === undefined ? payload : { ...payload, text: clip(payload.text, max) } });
  }

  async create(c: NewChat): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await m.query(
        `INSERT INTO chats (id, title, rib_id, agent, project_id, system_prompt, provider, model, tools, started_by, temporal_workflow_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10::jsonb, $11)`,
        [c.id, pgText(c.title), c.ribId, c.agent, c.projectId, c.systemPrompt === null ? null : pgText(c.systemPrompt), c.provider, c.model, JSON.stringify(c.tools), c.startedBy === null ? null : JSON.stringify(c.startedBy), c.temporalWorkflowId],
      );
      await this.append(m, c.id, 'CHAT_STARTED', { ...(c.ribId ? { ribId: c.ribId } : {}), ...(c.agent ? { agent: c.agent } : {}) });
    });
  }

  async get(id: string): Promise<ChatRecord | null> {
    const [row] = await rows<ChatRow>(this.dataSource, `SELECT ${COLUMNS} FROM chats WHERE id = $1`, [id]);
    return row ? toRecord(row) : null;
  }

  async byIds(ids: readonly string[]): Promise<ChatRecord[]> {
    if (ids.length === 0) return [];
    return (await rows<ChatRow>(this.dataSource, `SELECT ${COLUMNS} FROM chats WHERE id = ANY($1::uuid[])`, [ids])).map(toRecord);
  }

  /** Newest first; `beforeSeq` pages on. */
  async list(opts: { first: number; beforeSeq?: number }): Promise<ChatRecord[]> {
    const params: unknown[] = [opts.first];
    const where = opts.beforeSeq !== undefined ? `WHERE seq < $${params.push(opts.beforeSeq)}` : '';
    return (await rows<ChatRow>(this.dataSource, `SELECT ${COLUMNS} FROM chats ${where} ORDER BY seq DESC LIMIT $1`, params)).map(toRecord);
  }

  /** A chat's messages after `afterSeq`, oldest first. */
  async messages(chatId: string, opts: { first: number; afterSeq?: number }): Promise<ChatMessageRecord[]> {
    return (
      await rows<MessageRow>(this.dataSource, 'SELECT id, chat_id, seq, turn_id, role, text, created_at FROM chat_messages WHERE chat_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [
        chatId,
        opts.afterSeq ?? 0,
        opts.first,
      ])
    ).map(toMessage);
  }

  /** The messages of many chats, up to `perChat` each, oldest first (one statement). */
  /** The user's message that opened a turn. */
  async turnMessage(chatId: string, turnId: string): Promise<ChatMessageRecord | null> {
    const [row] = await rows<MessageRow>(this.dataSource, `SELECT id, chat_id, seq, turn_id, role, text, created_at FROM chat_messages WHERE chat_id = $1 AND turn_id = $2 AND role = 'USER'`, [chatId, turnId]);
    return row ? toMessage(row) : null;
  }

  async messagesOf(chatIds: readonly string[], perChat: number): Promise<Map<string, ChatMessageRecord[]>> {
    const got = await rows<MessageRow>(
      this.dataSource,
      `SELECT id, chat_id, seq, turn_id, role, text, created_at FROM (
         SELECT *, row_number() OVER (PARTITION BY chat_id ORDER BY seq) AS n FROM chat_messages WHERE chat_id = ANY($1::uuid[])
       ) m WHERE n <= $2 ORDER BY chat_id, seq`,
      [chatIds, perChat],
    );
    const out = new Map<string, ChatMessageRecord[]>(chatIds.map((id) => [id, []]));
    for (const r of got) out.get(r.chat_id)?.push(toMessage(r));
    return out;
  }

  /**
   * Opens a turn with the user's message: the message row, RESPONDING, and CHAT_MESSAGE then
   * CHAT_TURN_STARTED. The same turn opened again writes nothing; another turn while one is in flight
   * is TURN_IN_FLIGHT.
   */
  async openTurn(chatId: string, turn: { turnId: string; messageId: string; text: string }): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const [row] = await rows<{ turn_in_flight: string | null; status: ChatStatus; rib_id: string | null; agent: string | null }>(
        m,
        'SELECT turn_in_flight, status, rib_id, agent FROM chats WHERE id = $1 FOR UPDATE',
        [chatId],
      );
      if (!row) throw new MeshError('NOT_FOUND', `chat ${chatId} does not exist`);
      const [seen] = await rows<{ id: string }>(m, 'SELECT id FROM chat_messages WHERE id = $1', [turn.messageId]);
      if (seen) return;
      if (row.turn_in_flight && row.turn_in_flight !== turn.turnId) throw new MeshError('TURN_IN_FLIGHT', `chat ${chatId} is answering turn ${row.turn_in_flight}; send once it ends`);
      await this.insertMessage(m, chatId, { id: turn.messageId, turnId: turn.turnId, role: 'USER', text: turn.text });
      await m.query(`UPDATE chats SET status = 'RESPONDING', turn_in_flight = $2, updated_at = now() WHERE id = $1`, [chatId, turn.turnId]);
      await this.append(m, chatId, 'CHAT_MESSAGE', { turnId: turn.turnId, messageId: turn.messageId, role: 'USER', text: turn.text, ...whose(row) });
      await this.append(m, chatId, 'CHAT_TURN_STARTED', { turnId: turn.turnId });
    });
  }

  private async insertMessage(m: EntityManager, chatId: string, msg: { id: string; turnId: string; role: ChatRole; text: string }): Promise<void> {
    await m.query(
      `INSERT INTO chat_messages (id, chat_id, seq, turn_id, role, text)
       VALUES ($1, $2, (SELECT COALESCE(max(seq), 0) + 1 FROM chat_messages WHERE chat_id = $2), $3, $4, $5)`,
      [msg.id, chatId, msg.turnId, msg.role, pgText(msg.text)],
    );
  }

  /** One live event of the turn in flight (a tool call, a tool result, text, a steer note it read); dropped once the turn settled. */
  async turnEvent(chatId: string, turnId: string, type: 'CHAT_TOOL_CALL' | 'CHAT_TOOL_RESULT' | 'CHAT_DELTA' | 'CHAT_STEERED' | 'CHAT_APPROVAL_OPENED' | 'CHAT_APPROVAL_ANSWERED', payload: Omit<ChatEventPayload, 'turnId'>): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const [row] = await rows<{ turn_in_flight: string | null }>(m, 'SELECT turn_in_flight FROM chats WHERE id = $1 FOR SHARE', [chatId]);
      if (row?.turn_in_flight !== turnId) return;
      await this.append(m, chatId, type, { ...payload, turnId });
    });
  }

  /**
   * Settles the turn in flight: the assistant's message (when it said anything), the session the next
   * turn resumes, IDLE, and CHAT_MESSAGE then CHAT_TURN_ENDED. A turn already settled writes nothing.
   */
  async settleTurn(chatId: string, turnId: string, outcome: ChatTurnOutcome): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      const [row] = await rows<{ turn_in_flight: string | null; rib_id: string | null; agent: string | null }>(m, 'SELECT turn_in_flight, rib_id, agent FROM chats WHERE id = $1 FOR UPDATE', [
        chatId,
      ]);
      if (!row || row.turn_in_flight !== turnId) return;
      if (outcome.text) {
        await this.insertMessage(m, chatId, { id: outcome.messageId, turnId, role: 'ASSISTANT', text: outcome.text });
        await this.append(m, chatId, 'CHAT_MESSAGE', { turnId, messageId: outcome.messageId, role: 'ASSISTANT', text: outcome.text, ...whose(row) });
      }
      await m.query(`UPDATE chats SET status = 'IDLE', turn_in_flight = NULL, turns = turns + 1, session_id = COALESCE($2, session_id), updated_at = now() WHERE id = $1`, [
        chatId,
        outcome.sessionId ?? null,
      ]);
      await this.append(m, chatId, 'CHAT_TURN_ENDED', { turnId, status: outcome.status, ...(outcome.error ? { error: outcome.error.slice(0, 2000) } : {}) });
    });
  }

  /** A rib command run from the chat, and what it resolved to (an event only: the conversation shows it, the agent does not read it). */
  async recordCommand(chatId: string, c: { ribId: string; command: string; effect?: ChatCommandEffect; text?: string; error?: string }): Promise<void> {
    await this.dataSource.transaction(async (m) => {
      await this.append(m, chatId, 'CHAT_COMMAND', {
        ribId: c.ribId,
        command: c.command,
        ...(c.effect ? { effect: c.effect } : {}),
        ...(c.text ? { text: c.text } : {}),
        ...(c.error ? { error: c.error.slice(0, 2000) } : {}),
      });
    });
  }

  /** The chat cannot go on (its workflow could not start): FAILED with the reason. */
  async fail(chatId: string, reason: string): Promise<void> {
    await this.dataSource.query(`UPDATE chats SET status = 'FAILED', error = $2, turn_in_flight = NULL, updated_at = now() WHERE id = $1`, [chatId, pgText(reason.slice(0, 2000))]);
  }
}
