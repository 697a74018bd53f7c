import { JSONScalar } from '@keelson/kit';
import { Directive, Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One agent's memory of one session: its messages, in order, under the canonical SessionId. */
@ObjectType({ description: "One agent's memory of one session: its messages, in order, under the canonical SessionId." })
@Directive('@key(fields: "id")')
@Entity('memory_conversations')
export class Conversation {
  @Field(() => ID)
  @PrimaryColumn('uuid')
  id!: string;

  @Field({ description: 'The canonical SessionId `<harness-id>:<native-id>` (legacy rows: `task:<id>`).' })
  @Column('text', { name: 'session_key' })
  sessionKey!: string;

  @Field({ description: 'Who the memory belongs to; one session may hold one conversation per agent.' })
  @Column('text')
  agent!: string;

  @Field(() => String, { nullable: true, description: 'Where the conversation happened (the harness for captured sessions).' })
  @Column('text', { nullable: true })
  channel!: string | null;

  @Field(() => ID, { nullable: true, description: 'The task that spawned the session, if any.' })
  @Column('text', { name: 'task_id', nullable: true })
  taskId!: string | null;

  @Field(() => JSONScalar, { description: 'Free-form facts about the conversation (e.g. `rotatedFrom`).' })
  @Column('jsonb')
  metadata!: Record<string, unknown>;

  /** The highest `seq` handed out; the next message gets `lastSeq + 1`. */
  @Column('bigint', { name: 'last_seq' })
  lastSeq!: string;

  @Field(() => Date)
  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;

  @Field(() => Date, { description: 'When a message was last appended.' })
  @Column('timestamptz', { name: 'updated_at' })
  updatedAt!: Date;
}
