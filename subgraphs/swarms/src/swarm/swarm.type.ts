import { swarmAgentStatuses, swarmBusModes, swarmStatuses, type SwarmAgentStatus, type SwarmBusMode, type SwarmStatus } from '@keelson/schema';
import { Directive, Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { PageInfo } from '@keelson/kit';

const enumOf = <T extends string>(values: readonly T[]) => Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };

export const SwarmStatusEnum = enumOf(swarmStatuses);
registerEnumType(SwarmStatusEnum, {
  name: 'SwarmStatus',
  description: 'RUNNING; DONE (the lead concluded); STALLED (quiet, the lead did not conclude); EXHAUSTED (a limit ran out); STOPPED (stopSwarm or cancelOp); ERROR.',
});
export const SwarmAgentStatusEnum = enumOf(swarmAgentStatuses);
registerEnumType(SwarmAgentStatusEnum, { name: 'SwarmAgentStatus', description: 'IDLE, BUSY (a turn runs), CAPPED (its turns ran out), FAILED (three failed turns in a row).' });
export const SwarmBusModeEnum = enumOf(swarmBusModes);
registerEnumType(SwarmBusModeEnum, {
  name: 'SwarmBusMode',
  description: 'MANAGED: the mesh runs ClickClack itself; EXTERNAL: somebody else does (CLICKCLACK_URL / CLICKCLACK_TOKEN); UNAVAILABLE: neither a binary nor a URL.',
});

@ObjectType({ description: 'Where a swarm talks: its ClickClack channel.' })
export class SwarmChannel {
  @Field(() => ID)
  workspaceId!: string;

  @Field(() => ID)
  channelId!: string;

  @Field()
  name!: string;

  @Field(() => String, { nullable: true, description: "ClickClack's own web UI (`<bus>/app`): watch the swarm and speak in its channel there." })
  webUrl!: string | null;
}

@ObjectType({ description: 'A swarm\'s limits, as resolved at start.' })
export class SwarmLimits {
  @Field(() => Int)
  maxAgents!: number;

  @Field(() => Int)
  maxTurns!: number;

  @Field(() => Int)
  maxTurnsPerAgent!: number;

  @Field(() => Int)
  turnTimeoutS!: number;

  @Field(() => Int)
  maxMinutes!: number;
}

@ObjectType({ description: 'One item of the evidence supplied with the task (stored verbatim; bodies stay off events).' })
export class SwarmEvidence {
  @Field()
  title!: string;

  @Field(() => String, { nullable: true })
  sourceUrl!: string | null;

  @Field(() => Int, { description: 'Characters in the body.' })
  chars!: number;

  @Field({ description: 'The body, verbatim.' })
  body!: string;
}

@ObjectType({ description: 'An agent: a bot identity on the bus, an inbox, a resumable session.' })
export class SwarmAgent {
  @Field(() => ID, { description: 'Its name in the swarm (`lead` for the lead).' })
  id!: string;

  @Field({ description: 'Its ClickClack handle (`<swarm prefix>-<name>`); mention it as @handle.' })
  handle!: string;

  @Field()
  displayName!: string;

  @Field()
  role!: string;

  @Field()
  lead!: boolean;

  @Field({ description: 'A writer (write mode): a worktree and branch of its own.' })
  writer!: boolean;

  @Field(() => SwarmAgentStatusEnum)
  status!: SwarmAgentStatus;

  @Field({ description: 'It declared its part done (chat_done).' })
  finished!: boolean;

  @Field(() => Int)
  turns!: number;

  @Field(() => Int, { description: 'Messages waiting for its next turn.' })
  inboxDepth!: number;

  @Field(() => String, { nullable: true, description: 'The provider session its turns resume (`<provider>:<uuid>`).' })
  sessionId!: string | null;

  @Field(() => String, { nullable: true, description: 'The model that served its last turn.' })
  model!: string | null;

  @Field(() => ID, { nullable: true, description: 'Its bot user on the bus (what ClickClack stamps as the author).' })
  botUserId!: string | null;

  /** The write-mode lease, when it has one. */
  worktreeId!: string | null;
}

@ObjectType({ description: 'Who wrote a message, as the bus stamped it.' })
export class SwarmAuthor {
  @Field(() => ID)
  id!: string;

  @Field({ description: 'human or bot.' })
  kind!: string;

  @Field(() => String, { nullable: true })
  handle!: string | null;

  @Field()
  displayName!: string;

  @Field(() => ID, { nullable: true, description: 'The swarm agent, when one of the roster wrote it.' })
  agentId!: string | null;
}

@ObjectType({ description: 'A message of the swarm\'s channel, read from the bus on request.' })
export class SwarmMessage {
  @Field(() => ID)
  id!: string;

  @Field(() => SwarmAuthor)
  author!: SwarmAuthor;

  @Field()
  body!: string;

  @Field(() => ID, { description: 'The thread\'s root; equal to `id` for a top-level message.' })
  threadRootId!: string;

  @Field(() => Int, { nullable: true, description: 'The channel sequence of a top-level message; null for a reply.' })
  seq!: number | null;

  @Field(() => Int)
  replyCount!: number;

  @Field(() => String, { nullable: true })
  createdAt!: string | null;
}

@ObjectType()
export class SwarmMessageEdge {
  @Field()
  cursor!: string;

  @Field(() => SwarmMessage)
  node!: SwarmMessage;
}

@ObjectType({ description: 'Top-level messages of the channel, oldest first; the cursor is the channel sequence.' })
export class SwarmMessageConnection {
  @Field(() => [SwarmMessageEdge])
  edges!: SwarmMessageEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

@ObjectType({ description: 'A thread: its root and replies, read from the bus on request.' })
export class SwarmThread {
  @Field(() => SwarmMessage)
  root!: SwarmMessage;

  @Field(() => [SwarmMessage])
  replies!: SwarmMessage[];
}

@ObjectType({ description: 'A swarm (seed 001): agents on ClickClack, one durable op, one Temporal workflow.' })
@Directive('@key(fields: "id")')
export class Swarm {
  @Field(() => ID)
  id!: string;

  @Field()
  task!: string;

  @Field(() => SwarmStatusEnum)
  status!: SwarmStatus;

  @Field(() => Int)
  turnsUsed!: number;

  @Field(() => String, { nullable: true, description: 'The lead\'s conclusion (chat_report).' })
  conclusion!: string | null;

  @Field(() => String, { nullable: true, description: 'Why it ended otherwise than DONE (STALLED, EXHAUSTED, STOPPED and ERROR name their reason).' })
  error!: string | null;

  @Field(() => Date)
  startedAt!: Date;

  @Field(() => Date, { nullable: true })
  endedAt!: Date | null;

  @Field()
  temporalWorkflowId!: string;

  opId!: string;
  projectId!: string | null;
  input!: unknown;
  workspaceId!: string | null;
  channelId!: string | null;
  channelName!: string | null;
  webUrl!: string | null;
  agentViews!: SwarmAgent[];
}

@ObjectType()
export class SwarmEdge {
  @Field()
  cursor!: string;

  @Field(() => Swarm)
  node!: Swarm;
}

@ObjectType({ description: 'Swarms, newest first.' })
export class SwarmConnection {
  @Field(() => [SwarmEdge])
  edges!: SwarmEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

@ObjectType({ description: 'The swarms\' bus (ClickClack) as this mesh sees it. Reading it never starts anything.' })
export class SwarmServer {
  @Field(() => SwarmBusModeEnum)
  mode!: SwarmBusMode;

  @Field(() => String, { nullable: true })
  url!: string | null;

  @Field()
  running!: boolean;

  @Field(() => String, { nullable: true, description: 'Why it is UNAVAILABLE, or not running.' })
  reason!: string | null;

  @Field(() => String, { nullable: true, description: '`clickclack version` (managed) when known.' })
  version!: string | null;

  @Field(() => Int)
  liveSwarms!: number;

  @Field(() => Int, { nullable: true, description: 'The managed server\'s pid.' })
  pid!: number | null;

  @Field(() => Boolean, { nullable: true, description: 'Managed: this process found it running (a crashed process left it) rather than starting it.' })
  adopted!: boolean | null;

  @Field(() => String, { nullable: true, description: 'Managed: the binary it runs.' })
  binary!: string | null;

  @Field(() => String, { nullable: true, description: 'Managed: its data directory (what a reset deletes).' })
  dataDir!: string | null;
}
