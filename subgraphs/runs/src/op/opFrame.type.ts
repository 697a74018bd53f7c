import type { EventEnvelope, OpFramePayload, OpFrameType } from '@keelson/schema';
import { Field, Float, ID, ObjectType } from 'type-graphql';
import { PageInfo, payloadOrNull } from '@keelson/kit';
import { OpFrameTypeEnum } from '../run/run.enums';

/** One frame of an op: a log line, progress, a steer, or its terminal outcome. */
@ObjectType({ description: 'One frame of an op, in order. Pass cursor as `after` to resume.' })
export class OpFrame {
  @Field()
  cursor!: string;

  @Field(() => OpFrameTypeEnum)
  type!: OpFrameType;

  @Field(() => ID)
  opId!: string;

  @Field(() => String, { nullable: true, description: 'OP_LOG: one line.' })
  line!: string | null;

  @Field(() => Float, { nullable: true, description: 'OP_PROGRESS: 0 to 1.' })
  fraction!: number | null;

  @Field(() => String, { nullable: true, description: 'OP_PROGRESS: what is happening.' })
  message!: string | null;

  @Field(() => String, { nullable: true, description: 'OP_STEERED: the note.' })
  note!: string | null;

  @Field(() => String, { nullable: true, description: 'OP_FAILED / OP_CANCELLED.' })
  error!: string | null;

  @Field(() => Date)
  at!: Date;

  @Field(() => String, { nullable: true, description: 'Who caused the frame (OP_STEERED: the caller who steered, carried through the workflow); null for the op\'s own work.' })
  actor!: string | null;
}

@ObjectType()
export class OpFrameEdge {
  @Field()
  cursor!: string;

  @Field(() => OpFrame)
  node!: OpFrame;
}

@ObjectType({ description: 'A page of an op\'s frames, oldest first; cursors are the opFrames subscription\'s.' })
export class OpFrameConnection {
  @Field(() => [OpFrameEdge])
  edges!: OpFrameEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

/** An `ops` stream entry as the GraphQL `OpFrame`. */
export function toOpFrame(e: EventEnvelope<OpFramePayload>): OpFrame {
  const p = e.payload;
  const optional = payloadOrNull(p, ['line', 'fraction', 'message', 'note', 'error']);
  return Object.assign(new OpFrame(), { cursor: e.cursor, type: e.type as OpFrameType, opId: p.opId ?? e.key, ...optional, at: e.at, actor: e.actor?.subject ?? null });
}
