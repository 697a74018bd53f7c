import type { EventEnvelope, SwarmEventPayload, SwarmEventType } from '@keelson/schema';
import { createUnionType, Field, ID, Int, ObjectType } from 'type-graphql';

/** What every swarm event carries: ids only; read bodies through `Swarm.messages` / `Swarm.thread`. */
@ObjectType()
abstract class SwarmEventBase {
  @Field({ description: 'Opaque position in the mesh\'s own swarm stream (not ClickClack\'s cursor); resume with `after: cursor`.' })
  cursor!: string;

  @Field(() => ID)
  swarmId!: string;

  @Field(() => Date)
  at!: Date;

  __typename!: string;
}

@ObjectType({ description: 'The swarm booted: its channel exists.' })
export class SwarmStarted extends SwarmEventBase {}

@ObjectType({ description: 'An agent joined (the lead and named workers at start, chat_spawn later).' })
export class AgentJoined extends SwarmEventBase {
  @Field(() => ID)
  agentId!: string;

  @Field()
  handle!: string;

  @Field()
  lead!: boolean;

  @Field()
  writer!: boolean;
}

@ObjectType({ description: 'A message of the channel was ingested (once, whatever its echoes) and routed.' })
export class MessageIngested extends SwarmEventBase {
  @Field(() => ID)
  messageId!: string;

  @Field(() => ID)
  threadRootId!: string;

  @Field(() => ID)
  authorId!: string;

  @Field(() => ID, { nullable: true })
  authorAgentId!: string | null;

  @Field(() => [ID], { description: 'The agents route() woke.' })
  woke!: string[];
}

@ObjectType({ description: 'An agent started a turn with this batch of messages.' })
export class TurnStarted extends SwarmEventBase {
  @Field(() => ID)
  agentId!: string;

  @Field(() => Int)
  turnNo!: number;

  @Field(() => [ID])
  messageIds!: string[];
}

@ObjectType({ description: 'An agent\'s turn ended: ok, timeout, error or interrupted.' })
export class TurnEnded extends SwarmEventBase {
  @Field(() => ID)
  agentId!: string;

  @Field(() => Int)
  turnNo!: number;

  @Field()
  status!: string;

  @Field(() => String, { nullable: true })
  reason!: string | null;
}

@ObjectType({ description: 'An agent left the rotation: its turns ran out, or three turns failed in a row.' })
export class AgentRetired extends SwarmEventBase {
  @Field(() => ID)
  agentId!: string;

  @Field(() => String, { nullable: true })
  reason!: string | null;
}

@ObjectType({ description: 'The swarm was quiet; the lead was nudged to conclude or go on.' })
export class SwarmNudged extends SwarmEventBase {
  @Field(() => Int)
  nudge!: number;
}

@ObjectType({ description: 'The lead reported its conclusion (read it on Swarm.conclusion).' })
export class SwarmConcluded extends SwarmEventBase {
  @Field(() => ID)
  agentId!: string;
}

@ObjectType({ description: 'The swarm ended: its final status and why.' })
export class SwarmEnded extends SwarmEventBase {
  @Field()
  status!: string;

  @Field(() => String, { nullable: true })
  reason!: string | null;
}

export const SwarmEvent = createUnionType({
  name: 'SwarmEvent',
  description: 'One event of a swarm, in the order the mesh recorded it. Ids only.',
  types: () => [SwarmStarted, AgentJoined, MessageIngested, TurnStarted, TurnEnded, AgentRetired, SwarmNudged, SwarmConcluded, SwarmEnded] as const,
  resolveType: (value: { __typename?: string }) => value.__typename,
});

const classes: Record<SwarmEventType, new () => SwarmEventBase> = {
  SWARM_STARTED: SwarmStarted,
  AGENT_JOINED: AgentJoined,
  MESSAGE_INGESTED: MessageIngested,
  TURN_STARTED: TurnStarted,
  TURN_ENDED: TurnEnded,
  AGENT_RETIRED: AgentRetired,
  SWARM_NUDGED: SwarmNudged,
  SWARM_CONCLUDED: SwarmConcluded,
  SWARM_ENDED: SwarmEnded,
};

/** The GraphQL object of one `swarms` stream event. */
export function toSwarmEvent(e: EventEnvelope<SwarmEventPayload>): SwarmEventBase {
  const Cls = classes[e.type as SwarmEventType] ?? SwarmStarted;
  const p = e.payload;
  return Object.assign(new Cls(), {
    __typename: Cls.name,
    cursor: e.cursor,
    swarmId: p.swarmId ?? e.key,
    at: e.at,
    agentId: p.agentId ?? null,
    handle: p.handle ?? '',
    lead: p.lead ?? false,
    writer: p.writer ?? false,
    messageId: p.messageId ?? '',
    threadRootId: p.threadRootId ?? '',
    authorId: p.authorId ?? '',
    authorAgentId: p.authorAgentId ?? null,
    woke: p.woke ?? [],
    turnNo: p.turnNo ?? 0,
    messageIds: p.messageIds ?? [],
    status: p.status ?? '',
    reason: p.reason ?? null,
    nudge: p.nudge ?? 0,
  });
}
