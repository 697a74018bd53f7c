import { Field, ID, Int, ObjectType } from 'type-graphql';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A summary of a range of a conversation's messages (`fromSeq`..`toSeq`, inclusive). At most one per
 * range, so a compaction that runs twice stores one.
 */
@ObjectType({ description: "A summary of a range of a conversation's messages (fromSeq..toSeq, inclusive)." })
@Entity('memory_summaries')
export class MemorySummary {
  @Field(() => ID)
  @PrimaryColumn('bigint')
  id!: string;

  @Column('uuid', { name: 'conversation_id' })
  conversationId!: string;

  @Field(() => Int)
  @Column('bigint', { name: 'from_seq', transformer: { from: (v: string | null) => (v == null ? v : Number(v)), to: (v: number) => v } })
  fromSeq!: number;

  @Field(() => Int)
  @Column('bigint', { name: 'to_seq', transformer: { from: (v: string | null) => (v == null ? v : Number(v)), to: (v: number) => v } })
  toSeq!: number;

  @Field()
  @Column('text')
  content!: string;

  @Field(() => String, { nullable: true, description: 'The model that wrote it.' })
  @Column('text', { nullable: true })
  model!: string | null;

  @Field(() => Date)
  @Column('timestamptz', { name: 'created_at' })
  createdAt!: Date;
}
