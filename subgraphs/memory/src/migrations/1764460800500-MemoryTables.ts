import { cursorTableSql, sqlMigration } from '@keelson/platform';

/**
 * Memory's tables. Conversations are keyed by (canonical SessionId, agent); messages are ordered by a
 * per-conversation `seq` and deduplicated by a key unique per conversation (capture uses the native
 * message id), so replays insert nothing. Messages and summaries carry a generated `tsvector` (GIN)
 * for full-text search and a GIN trigram index on their text for identifiers and paths.
 */
export const MemoryTables1764460800500 = sqlMigration('MemoryTables1764460800500', {
  up: [
    // Trusted since Postgres 13: the database owner may create it without superuser.
    'CREATE EXTENSION IF NOT EXISTS pg_trgm',

    `CREATE TABLE memory_conversations (
      id uuid PRIMARY KEY,
      session_key text NOT NULL,
      agent text NOT NULL,
      channel text,
      task_id text,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      last_seq bigint NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT memory_conversations_session_agent UNIQUE (session_key, agent)
    )`,
    'CREATE INDEX memory_conversations_task ON memory_conversations (task_id) WHERE task_id IS NOT NULL',
    'CREATE INDEX memory_conversations_agent ON memory_conversations (agent, updated_at DESC)',

    `CREATE TABLE memory_messages (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      conversation_id uuid NOT NULL REFERENCES memory_conversations(id) ON DELETE CASCADE,
      seq bigint NOT NULL,
      role text NOT NULL,
      content text NOT NULL,
      tool_calls jsonb,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      dedupe_key text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
      CONSTRAINT memory_messages_dedupe UNIQUE (conversation_id, dedupe_key),
      CONSTRAINT memory_messages_seq UNIQUE (conversation_id, seq)
    )`,
    'CREATE INDEX memory_messages_recent ON memory_messages (conversation_id, created_at DESC, seq DESC)',
    'CREATE INDEX memory_messages_created ON memory_messages (created_at DESC)',
    'CREATE INDEX memory_messages_fts ON memory_messages USING gin (content_tsv)',
    'CREATE INDEX memory_messages_trgm ON memory_messages USING gin (content gin_trgm_ops)',

    `CREATE TABLE memory_summaries (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      conversation_id uuid NOT NULL REFERENCES memory_conversations(id) ON DELETE CASCADE,
      from_seq bigint NOT NULL,
      to_seq bigint NOT NULL,
      content text NOT NULL,
      model text,
      created_at timestamptz NOT NULL DEFAULT now(),
      content_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, content)) STORED,
      CONSTRAINT memory_summaries_range UNIQUE (conversation_id, from_seq, to_seq),
      CONSTRAINT memory_summaries_range_valid CHECK (from_seq >= 1 AND to_seq >= from_seq)
    )`,
    'CREATE INDEX memory_summaries_fts ON memory_summaries USING gin (content_tsv)',
    'CREATE INDEX memory_summaries_trgm ON memory_summaries USING gin (content gin_trgm_ops)',

    `CREATE TABLE memory_session_settings (
      session_key text PRIMARY KEY,
      settings jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`,
    // The durable rotation breadcrumb (seed 002: metadata.kind = 'session-rotation').
    `CREATE TABLE memory_session_links (
      session_key text NOT NULL,
      previous_session_key text NOT NULL,
      kind text NOT NULL DEFAULT 'session-rotation',
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (session_key, previous_session_key)
    )`,
    // A capture consumer's position in its stream, advanced in the transaction of what it wrote.
    cursorTableSql('memory_capture_cursors', { positionDefault: true }),
  ],
  down: [
    'DROP TABLE memory_capture_cursors',
    'DROP TABLE memory_session_links',
    'DROP TABLE memory_session_settings',
    'DROP TABLE memory_summaries',
    'DROP TABLE memory_messages',
    'DROP TABLE memory_conversations',
  ],
});
