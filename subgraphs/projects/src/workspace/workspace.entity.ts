import { Directive, Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/** A durable lease on an isolated git worktree of a project, enumerable until released. */
@ObjectType({ description: 'A durable lease on an isolated git worktree of a project, enumerable until released.' })
@Directive('@key(fields: "id")')
@Entity('workspace_leases')
@Index(['projectId', 'releasedAt'])
export class WorkspaceLease {
  @Field(() => ID)
  @PrimaryColumn('uuid')
  id!: string;

  @Column('uuid', { name: 'project_id' })
  projectId!: string;

  @Field({ description: 'Absolute path of the worktree.' })
  @Column('text')
  path!: string;

  @Field({ description: 'The branch the worktree was created on.' })
  @Column('text')
  branch!: string;

  @Field(() => String, { nullable: true })
  @Column('text', { nullable: true })
  purpose!: string | null;

  @Field(() => Date)
  @Column('timestamptz', { name: 'acquired_at' })
  acquiredAt!: Date;

  @Column('timestamptz', { name: 'released_at', nullable: true })
  releasedAt!: Date | null;
}
