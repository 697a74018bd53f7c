import { sqlMigration } from '@keelson/platform';

/**
 * `memory_messages.agent`: the agent of the message's conversation, copied onto the row so that a
 * search for one agent filters inside the indexes instead of after a join. A conversation's agent is
 * part of its key and never changes, so the copy never goes stale. Full text gets one GIN over
 * (agent, content_tsv) (btree_gin), which answers a tsquery with or without the agent and replaces
 * `memory_messages_fts`; the recency walk of the full-text legs gets (agent, created_at DESC).
 * The backfill rewrites every message with the table locked: 14 s at 100,000 messages on two
 * shared cores, so minutes at a million.
 */
export const MemoryMessageAgent1764460800520 = sqlMigration('MemoryMessageAgent1764460800520', {
  up: [
    // Trusted since Postgres 13: the database owner may create it without superuser.
    'CREATE EXTENSION IF NOT EXISTS btree_gin',
    'ALTER TABLE memory_messages ADD COLUMN agent text',
    // The old full-text index goes before the backfill rewrites every row: one index fewer to update.
    'DROP INDEX memory_messages_fts',
    'UPDATE memory_messages m SET agent = c.agent FROM memory_conversations c WHERE c.id = m.conversation_id',
    'ALTER TABLE memory_messages ALTER COLUMN agent SET NOT NULL',
    'CREATE INDEX memory_messages_agent_fts ON memory_messages USING gin (agent, content_tsv)',
    'CREATE INDEX memory_messages_agent_created ON memory_messages (agent, created_at DESC)',
  ],
  down: [
    'CREATE INDEX memory_messages_fts ON memory_messages USING gin (content_tsv)',
    'DROP INDEX memory_messages_agent_created',
    'DROP INDEX memory_messages_agent_fts',
    'ALTER TABLE memory_messages DROP COLUMN agent',
    // btree_gin stays, as pg_trgm does: another table's index may use it by now.
  ],
});
