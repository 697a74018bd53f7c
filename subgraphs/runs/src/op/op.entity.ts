import type { RunStatus } from '@keelson/schema';
import { JSONScalar } from '@keelson/kit';
import { Directive, Field, ID, ObjectType } from 'type-graphql';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { RunStatusEnum } from '../run/run.enums';

/** A durable long-running op (the `durableOp` Temporal workflow). */
@ObjectType({ description: 'A durable long-running op: frames and the terminal result persist in the event log.' })
@Directive('@key(fields: "id")')
@Entity('ops')
export class Op {
  @Field(() => ID)
  @PrimaryColumn('uuid')
  id!: string;

  @Column({ type: 'bigint', insert: false, update: false })
  seq!: string;

  @Field({ description: 'What the op does; the worker\'s op registry runs it.' })
  @Column('text')
  kind!: string;

  @Field(() => String, { nullable: true })
  @Column('text', { nullable: true })
  title!: string | null;

  @Field(() => JSONScalar, { nullable: true })
  @Column('jsonb', { nullable: true })
  input!: unknown;

  @Field(() => RunStatusEnum)
  @Column('text')
  status!: RunStatus;

  @Field(() => JSONScalar, { nullable: true, description: 'The terminal result of a SUCCEEDED op.' })
  @Column('jsonb', { nullable: true })
  result!: unknown;

  @Field(() => String, { nullable: true })
  @Column('text', { nullable: true })
  error!: string | null;

  @Field({ description: 'Whether steerOp reaches it.' })
  @Column('boolean')
  steerable!: boolean;

  @Column('text', { name: 'rib_id', nullable: true })
  ribId!: string | null;

  @Column('uuid', { name: 'project_id', nullable: true })
  projectId!: string | null;

  @Field()
  @Column('text', { name: 'temporal_workflow_id' })
  temporalWorkflowId!: string;

  @Field(() => Date)
  @Column('timestamptz', { name: 'started_at' })
  startedAt!: Date;

  @Field(() => Date, { nullable: true })
  @Column('timestamptz', { name: 'completed_at', nullable: true })
  completedAt!: Date | null;
}
