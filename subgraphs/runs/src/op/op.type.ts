import type { RunStatus } from '@keelson/schema';
import { JSONScalar } from '@keelson/kit';
import { Directive, Field, ID, ObjectType } from 'type-graphql';
import { RunStatusEnum } from '../run/run.enums';

/** A durable long-running op (the `durableOp` Temporal workflow). */
@ObjectType('Op', { description: 'A durable long-running op: frames and the terminal result persist in the event log.' })
@Directive('@key(fields: "id")')
export class OpType {
  @Field(() => ID)
  id!: string;

  @Field({ description: 'What the op does; the worker\'s op registry runs it.' })
  kind!: string;

  @Field(() => String, { nullable: true })
  title!: string | null;

  @Field(() => JSONScalar, { nullable: true })
  input!: unknown;

  @Field(() => RunStatusEnum)
  status!: RunStatus;

  @Field(() => JSONScalar, { nullable: true, description: 'The terminal result of a SUCCEEDED op.' })
  result!: unknown;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field({ description: 'Whether steerOp reaches it.' })
  steerable!: boolean;

  @Field()
  temporalWorkflowId!: string;

  @Field(() => Date)
  startedAt!: Date;

  @Field(() => Date, { nullable: true })
  completedAt!: Date | null;
}
