import type { SessionView } from '@keelson/harness';
import { GraphQLJSON } from 'graphql-scalars';
import { Directive, Field, ID, ObjectType } from 'type-graphql';
import { PageInfo } from '@keelson/kit';

@ObjectType({ description: 'A session of a harness CLI, keyed by its canonical SessionId.' })
@Directive('@key(fields: "id")')
export class HarnessSession {
  @Field(() => ID, { description: 'The canonical SessionId `<harness-id>:<native-id>`.' })
  id!: string;

  @Field({ description: "The CLI's own session id (the part after the first colon)." })
  nativeId!: string;

  @Field({ description: '`idle`, `running` (a turn in flight) or `rotated` (continued under another id).' })
  status!: string;

  @Field({ description: '`started` (startSession), `adopted` (from the native store), `task` (runTask) or `native` (only in the native store so far).' })
  origin!: string;

  @Field(() => String, { nullable: true })
  title!: string | null;

  @Field(() => String, { nullable: true, description: "The directory its turns run in: the project's root or a leased worktree." })
  cwd!: string | null;

  @Field(() => Date, { nullable: true })
  createdAt!: Date | null;

  @Field(() => Date, { nullable: true })
  updatedAt!: Date | null;

  @Field({ description: 'Whether a turn holds the session now (a second sendUserTurn is TURN_IN_FLIGHT).' })
  turnInFlight!: boolean;

  @Field(() => ID, { nullable: true, description: 'The in-flight turn, if any.' })
  currentTurnId!: string | null;

  harnessId!: string;
  projectId!: string | null;
  taskId!: string | null;
  view!: SessionView;
}

/** The GraphQL object of a session view. */
export function toSession(view: SessionView): HarnessSession {
  const r = view.record;
  const inFlight = Boolean(r?.turnId && r.turnExpiresAt && r.turnExpiresAt.getTime() > Date.now());
  return Object.assign(new HarnessSession(), {
    id: view.id,
    nativeId: view.nativeId,
    status: r ? (r.status === 'running' && !inFlight ? 'idle' : r.status) : 'idle',
    origin: r?.origin ?? 'native',
    title: r?.title ?? view.native?.title ?? null,
    cwd: r?.cwd ?? view.native?.cwd ?? null,
    createdAt: r?.createdAt ?? view.native?.createdAt ?? null,
    updatedAt: latest(r?.updatedAt ?? null, view.native?.updatedAt ?? null),
    turnInFlight: inFlight,
    currentTurnId: inFlight ? r!.turnId : null,
    harnessId: view.harnessId,
    projectId: r?.projectId ?? null,
    taskId: r?.taskId ?? null,
    view,
  });
}

function latest(a: Date | null, b: Date | null): Date | null {
  if (!a) return b;
  if (!b) return a;
  return a.getTime() >= b.getTime() ? a : b;
}

@ObjectType()
export class HarnessSessionEdge {
  @Field({ description: 'Opaque; pass as `after` to continue after this session.' })
  cursor!: string;

  @Field(() => HarnessSession)
  node!: HarnessSession;
}

@ObjectType({ description: 'A page of sessions, most recently active first.' })
export class HarnessSessionConnection {
  @Field(() => [HarnessSessionEdge])
  edges!: HarnessSessionEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

@ObjectType({ description: "One final entry of a session's native transcript (the source of truth for what the CLI wrote)." })
export class TranscriptEntry {
  @Field(() => ID, { description: 'The native entry id: stable, unique within the session.' })
  id!: string;

  @Field({ description: '`user`, `assistant`, `tool` or `system`.' })
  role!: string;

  @Field()
  content!: string;

  @Field(() => GraphQLJSON, { nullable: true, description: '`[{ id name input }]` for an assistant entry that called tools.' })
  toolCalls!: unknown;

  @Field(() => Date, { nullable: true })
  createdAt!: Date | null;

  @Field(() => GraphQLJSON, { nullable: true })
  metadata!: unknown;
}

@ObjectType()
export class TranscriptEdge {
  @Field()
  cursor!: string;

  @Field(() => TranscriptEntry)
  node!: TranscriptEntry;
}

@ObjectType({ description: "A page of a session's transcript, oldest first, read from the CLI's own store." })
export class TranscriptConnection {
  @Field(() => [TranscriptEdge])
  edges!: TranscriptEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

@ObjectType({ description: 'A permission request the CLI reported, waiting for resolveApproval.' })
export class HarnessApproval {
  @Field(() => ID)
  requestId!: string;

  @Field()
  toolName!: string;

  @Field(() => GraphQLJSON, { nullable: true })
  input!: unknown;

  @Field(() => ID, { nullable: true })
  turnId!: string | null;

  @Field(() => Date)
  createdAt!: Date;
}

@ObjectType({ description: 'One choice a prompt offers (the answer may be any text).' })
export class PromptOption {
  @Field()
  label!: string;

  @Field(() => String, { nullable: true })
  description!: string | null;
}

@ObjectType({ description: 'A question the CLI asked that waits for answerPrompt.' })
export class HarnessPrompt {
  @Field(() => ID)
  promptId!: string;

  @Field()
  question!: string;

  @Field(() => String, { nullable: true })
  header!: string | null;

  @Field(() => [PromptOption])
  options!: PromptOption[];

  @Field()
  multiSelect!: boolean;

  @Field(() => ID, { nullable: true })
  turnId!: string | null;

  @Field(() => Date)
  createdAt!: Date;
}

@ObjectType({ description: 'A turn the CLI has started; its events follow on harnessEvents, ending with TurnComplete.' })
export class TurnAccepted {
  @Field(() => ID)
  sessionId!: string;

  @Field(() => ID)
  turnId!: string;

  @Field(() => Date)
  acceptedAt!: Date;
}
