import { Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** The advisory per-project lock held while a project's live checkout is mutated directly. */
@ObjectType({ description: "The advisory per-project lock held while a project's live checkout is mutated directly." })
@Entity('mutation_locks')
@Index(['projectId', 'acquiredAt'])
export class MutationLock {
  @Field(() => ID)
  @PrimaryColumn('uuid')
  id!: string;

  @Column('uuid', { name: 'project_id' })
  projectId!: string;

  @Field()
  @Column('text')
  purpose!: string;

  @Field()
  @Column('text')
  holder!: string;

  @Field(() => Date)
  @Column('timestamptz', { name: 'acquired_at' })
  acquiredAt!: Date;
}
