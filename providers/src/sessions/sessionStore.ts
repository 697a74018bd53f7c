import { resultRows, type Queryable } from '../ledger/queryable';
import type { TurnMessage } from '../types';

/** A provider session the mesh keeps: the conversation so far, so a later turn can continue it. */
export interface StoredSession {
  /** `<providerId>:<uuid>`, the `sessionId` a turn returns. */
  id: string;
  providerId: string;
  model: string;
  /** The rib that owns it; only that rib's turns resume it (null for workflow turns). */
  ribId: string | null;
  messages: TurnMessage[];
}

/** Where sessions live between turns. */
export interface SessionStore {
  load(id: string): Promise<StoredSession | undefined>;
  /** Creates or replaces the session. */
  save(session: StoredSession): Promise<void>;
}

/** Sessions in Postgres (`agent_sessions`, created by {@link AgentTurnTables1764460800320}). */
export class PgSessionStore implements SessionStore {
  constructor(private readonly db: Queryable) {}

  async load(id: string): Promise<StoredSession | undefined> {
    const [row] = resultRows<{ id: string; provider_id: string; model: string; rib_id: string | null; messages: TurnMessage[] }>(
      await this.db.query('SELECT id, provider_id, model, rib_id, messages FROM agent_sessions WHERE id = $1', [id]),
    );
    return row ? { id: row.id, providerId: row.provider_id, model: row.model, ribId: row.rib_id, messages: row.messages } : undefined;
  }

  async save(session: StoredSession): Promise<void> {
    await this.db.query(
      `INSERT INTO agent_sessions (id, provider_id, model, rib_id, messages) VALUES ($1, $2, $3, $4, $5::jsonb)
       ON CONFLICT (id) DO UPDATE SET model = EXCLUDED.model, messages = EXCLUDED.messages, updated_at = now()`,
      [session.id, session.providerId, session.model, session.ribId, JSON.stringify(session.messages)],
    );
  }
}

/** Sessions in memory (tests). */
export class InMemorySessionStore implements SessionStore {
  private readonly sessions = new Map<string, StoredSession>();

  async load(id: string): Promise<StoredSession | undefined> {
    const s = this.sessions.get(id);
    return s ? structuredClone(s) : undefined;
  }

  async save(session: StoredSession): Promise<void> {
    this.sessions.set(session.id, structuredClone(session));
  }
}
