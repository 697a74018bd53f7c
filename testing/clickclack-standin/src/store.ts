import { appendFileSync, closeSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { prefixedId, UlidFactory } from './ids';

export interface UserRow {
  id: string;
  kind: 'human' | 'bot';
  display_name: string;
  email: string | null;
  handle: string | null;
  /** Set for a user-owned bot; null for a service bot and for humans. */
  owner_user_id: string | null;
  created_at: string;
  deleted_at: string | null;
  former_handle: string | null;
}

export interface WorkspaceRow {
  id: string;
  name: string;
  slug: string;
  created_at: string;
}

export type Role = 'owner' | 'moderator' | 'member' | 'guest' | 'bot';

export interface MemberRow {
  /** `<workspace_id>:<user_id>` */
  id: string;
  workspace_id: string;
  user_id: string;
  role: Role;
  removed_at: string | null;
}

export interface ChannelRow {
  id: string;
  workspace_id: string;
  name: string;
  display_title: string | null;
  kind: string;
  created_at: string;
  last_seq: number;
}

export interface StandinMessageRow {
  id: string;
  workspace_id: string;
  channel_id: string;
  author_id: string;
  body: string;
  nonce: string | null;
  kind: string;
  turn_id: string | null;
  quoted_message_id: string | null;
  /** Its own id for a root. */
  thread_root_id: string;
  /** The channel sequence of a root; null for a thread reply. */
  channel_seq: number | null;
  created_at: string;
  reply_count: number;
  last_reply_at: string | null;
}

export interface BotTokenRow {
  id: string;
  bot_id: string;
  workspace_id: string;
  name: string;
  scopes: string[];
  token_hash: string;
  setup_nonce: string | null;
  created_at: string;
  revoked_at: string | null;
}

export interface SessionRow {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
}

export interface MagicLinkRow {
  id: string;
  email: string;
  user_id: string;
  token_hash: string;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
}

/** A bot created with a `setup_nonce`: the retry finds it here (`<workspace>:<creator>:<nonce>`). */
export interface BotNonceRow {
  id: string;
  bot_id: string;
  token_id: string | null;
}

export interface EventRow {
  id: string;
  cursor: string;
  type: string;
  workspace_id: string;
  channel_id: string | null;
  seq: number | null;
  created_at: string;
  payload: Record<string, unknown>;
  mentioned_user_ids: string[];
}

interface Tables {
  users: UserRow;
  workspaces: WorkspaceRow;
  members: MemberRow;
  channels: ChannelRow;
  messages: StandinMessageRow;
  botTokens: BotTokenRow;
  sessions: SessionRow;
  magicLinks: MagicLinkRow;
  botNonces: BotNonceRow;
}
export type TableName = keyof Tables;

const TABLES: TableName[] = ['users', 'workspaces', 'members', 'channels', 'messages', 'botTokens', 'sessions', 'magicLinks', 'botNonces'];

/**
 * The stand-in's state: tables of rows by id, plus the durable event log in cursor order. Every
 * change is appended to `<data>/standin.journal` (one JSON line per row written) before it is
 * visible, and the journal is replayed at start, so a restart on the same data directory keeps
 * every identity, message and event, and resumes from the same cursors.
 */
export class StandinStore {
  private readonly tables = new Map<TableName, Map<string, unknown>>(TABLES.map((t) => [t, new Map()]));
  readonly events: EventRow[] = [];
  private readonly eventIndex = new Map<string, number>();
  readonly ids = new UlidFactory();
  private readonly journal: string;

  constructor(readonly dataDir: string) {
    mkdirSync(dataDir, { recursive: true });
    mkdirSync(join(dataDir, 'uploads'), { recursive: true });
    mkdirSync(join(dataDir, 'logs'), { recursive: true });
    this.journal = join(dataDir, 'standin.journal');
    closeSync(openSync(this.journal, 'a'));
    this.replay();
  }

  /** Applies the journal's rows (all tables, or only `only`) in order: the last write of a row wins. */
  private replay(only?: TableName): void {
    for (const line of readFileSync(this.journal, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      let entry: { t: string; row: { id: string } };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        continue; // a line torn by a kill mid-write: everything before it is intact
      }
      if (only !== undefined && entry.t !== only) continue;
      if (entry.t === 'events') this.indexEvent(entry.row as unknown as EventRow);
      else this.tables.get(entry.t as TableName)?.set(entry.row.id, entry.row);
    }
  }

  /**
   * Re-reads one table from the journal: rows another process appended (the `admin` commands write
   * the data directory while the server runs, as the real server's admin commands write its
   * database).
   */
  reload(table: TableName): void {
    this.replay(table);
  }

  private indexEvent(row: EventRow): void {
    if (this.eventIndex.has(row.cursor)) return;
    this.eventIndex.set(row.cursor, this.events.length);
    this.events.push(row);
  }

  private write(t: string, row: unknown): void {
    appendFileSync(this.journal, `${JSON.stringify({ t, row })}\n`);
  }

  get<T extends TableName>(table: T, id: string): Tables[T] | undefined {
    return this.tables.get(table)!.get(id) as Tables[T] | undefined;
  }

  all<T extends TableName>(table: T): Tables[T][] {
    return [...this.tables.get(table)!.values()] as Tables[T][];
  }

  /** Creates or replaces a row (journal first). */
  put<T extends TableName>(table: T, row: Tables[T]): Tables[T] {
    this.write(table, row);
    this.tables.get(table)!.set((row as { id: string }).id, row);
    return row;
  }

  newId(prefix: string): string {
    return prefixedId(this.ids, prefix);
  }

  /** Appends a durable event with the next cursor. */
  appendEvent(e: Omit<EventRow, 'id' | 'cursor' | 'created_at'>): EventRow {
    const newest = this.events.at(-1)?.cursor.slice('cur_'.length) ?? '';
    const row: EventRow = { id: this.newId('evt'), cursor: `cur_${this.ids.next(newest)}`, created_at: new Date().toISOString(), ...e };
    this.write('events', row);
    this.indexEvent(row);
    return row;
  }

  /** The position of `cursor` in the log, or undefined for a cursor this server never issued. */
  eventPosition(cursor: string): number | undefined {
    return this.eventIndex.get(cursor);
  }
}
