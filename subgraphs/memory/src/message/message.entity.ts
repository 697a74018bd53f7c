import { JSONScalar } from '@keelson/kit';
import { Field, ID, Int, ObjectType } from 'type-graphql';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One message of a conversation, as captured or appended. */
@ObjectType({ description: 'One message of a conversation, as captured or appended.' })
@Entity('memory_messages')
export class MemoryMessage {
  @Field(() => ID)
  @PrimaryColumn('bigint')
  id!: string;

  @Column('uuid', { name: 'conversation_id' })
  conversationId!: string;

  @Field({ description: 'The SessionId of the conversation the message belongs to (differs from the asked id after a rotation).' })
  sessionKey!: string;

  @Field(() => Int, { description: 'Position in its conversation, starting at 1; strictly increasing in append order.' })
  @Column('bigint', { transformer: { from: (v: string | null) => (v == null ? v : Number(v)), to: (v: number) => v } })
  seq!: number;

  @Field({ description: 'user, assistant, system, tool, …' })
  @Column('text')
  role!: string;

  @Field()
  @Column('text')
  content!: string;

  @Field(() => JSONScalar, { nullable: true, description: 'The tool calls the message made, as the harness reported them.' })
  @Column('jsonb', { name: 'tool_calls', nullable: true })
  toolCalls!: unknown;

  @Field(() => JSONScalar)
  @Column('jsonb')
  metadata!: Record<string, unknown>;

  /** Unique per conversation: the native message id for captured messages. */
  @Column('text', { name: 'dedupe_key' })
  dedupeKey!: string;

  @Field(() => Date)
  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;
}

/** The columns message queries select, joined with their conversation's session key. */
export const MESSAGE_COLUMNS =
  'm.id::text AS id, m.conversation_id, c.session_key, m.seq, m.role, m.content, m.tool_calls, m.metadata, m.dedupe_key, m.created_at';

export interface MessageRow {
  id: string;
  conversation_id: string;
  session_key: string;
  seq: string | number;
  role: string;
  content: string;
  tool_calls: unknown;
  metadata: Record<string, unknown>;
  dedupe_key: string;
  created_at: Date;
}

export function toMessage(row: MessageRow): MemoryMessage {
  return Object.assign(new MemoryMessage(), {
    id: row.id,
    conversationId: row.conversation_id,
    sessionKey: row.session_key,
    seq: Number(row.seq),
    role: row.role,
    content: row.content,
    toolCalls: row.tool_calls ?? null,
    metadata: row.metadata ?? {},
    dedupeKey: row.dedupe_key,
    createdAt: row.created_at,
  });
}
