import { orderedEntityKey, sqlMigration } from '@keelson/platform';

/**
 * The chats domain's tables: one row per chat (what it was started from — the rib, the agent, the
 * system prompt, the tools — and its state: status, the provider session the next turn resumes, the
 * turn in flight) and one per message. Run by the ribs service and by workers (`chats_migrations`);
 * {@link ChatStore} is the only writer.
 */
export const ChatsTables1764460800800 = sqlMigration('ChatsTables1764460800800', {
  up: [
    `CREATE TABLE chats (
      ${orderedEntityKey},
      title text NOT NULL,
      rib_id text,
      agent text,
      project_id uuid,
      system_prompt text,
      provider text,
      model text,
      tools jsonb NOT NULL DEFAULT '[]'::jsonb,
      status text NOT NULL DEFAULT 'IDLE',
      session_id text,
      turns int NOT NULL DEFAULT 0,
      turn_in_flight uuid,
      error text,
      started_by jsonb,
      temporal_workflow_id text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    `CREATE TABLE chat_messages (
      id uuid PRIMARY KEY,
      chat_id uuid NOT NULL REFERENCES chats(id) ON DELETE CASCADE,
      seq int NOT NULL,
      turn_id uuid NOT NULL,
      role text NOT NULL,
      text text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (chat_id, seq)
    )`,
  ],
  down: ['DROP TABLE chat_messages', 'DROP TABLE chats'],
});

/** The chats domain's migrations, in order, recorded in `chats_migrations`. */
export const chatMigrations = [ChatsTables1764460800800];
export const CHAT_MIGRATIONS_TABLE = 'chats_migrations';
