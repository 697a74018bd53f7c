import type { RunEventType } from '@keelson/schema';
import { Field, ID, Int, ObjectType } from 'type-graphql';
import { PageInfo } from '@keelson/kit';
import { RunEventTypeEnum } from '../run/run.enums';

/** One transition of a run: ids and small facts; bodies (outputs) are read from `Run.nodes`. */
@ObjectType({ description: 'One transition of a run, in order. Pass cursor as `after` to resume.' })
export class RunEvent {
  @Field({ description: 'Opaque; pass as `after` to resume right after this event.' })
  cursor!: string;

  @Field(() => RunEventTypeEnum)
  type!: RunEventType;

  @Field(() => ID)
  runId!: string;

  @Field(() => Int, { description: 'The launch the transition belongs to (1, then +1 per resume).' })
  launch!: number;

  @Field(() => String, { nullable: true })
  nodeId!: string | null;

  @Field(() => Int, { nullable: true })
  attempt!: number | null;

  @Field(() => String, { nullable: true })
  pauseId!: string | null;

  @Field(() => String, { nullable: true, description: 'APPROVAL_ANSWERED: "approved" or "feedback".' })
  decision!: string | null;

  @Field(() => Int, { nullable: true })
  exitCode!: number | null;

  @Field(() => String, { nullable: true, description: 'Failures: the first 500 characters of the error.' })
  error!: string | null;

  @Field(() => Date)
  at!: Date;
}

@ObjectType()
export class RunEventEdge {
  @Field()
  cursor!: string;

  @Field(() => RunEvent)
  node!: RunEvent;
}

@ObjectType({ description: 'A page of a run\'s events, oldest first; cursors are the runEvents subscription\'s.' })
export class RunEventConnection {
  @Field(() => [RunEventEdge])
  edges!: RunEventEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}
