import { toHarnessEvent } from '@keelson/harness';
import { turnStatuses, type ApprovalDecision, type EventEnvelope, type HarnessEventType, type TurnStatus } from '@keelson/schema';
import { GraphQLJSON } from 'graphql-scalars';
import { Field, ID, Int, InterfaceType, ObjectType, registerEnumType } from 'type-graphql';
import { ApprovalDecisionEnum } from '../session/session.resolver';
import { PromptOption } from '../session/session.type';

export const TurnStatusEnum = Object.fromEntries(turnStatuses.map((s) => [s, s])) as { [K in TurnStatus]: K };
registerEnumType(TurnStatusEnum, {
  name: 'TurnStatus',
  description: 'How a turn ended: COMPLETED, INTERRUPTED (interruptSession or a cancelled task), FAILED, or LOST (its process stopped renewing the lease).',
});

/** Which GraphQL type each event type of the `harness` stream is. */
const typeNames: Record<HarnessEventType, string> = {
  ASSISTANT_DELTA: 'AssistantDelta',
  REASONING_DELTA: 'ReasoningDelta',
  TOOL_USE: 'ToolUse',
  TOOL_RESULT: 'ToolResult',
  APPROVAL_REQUEST: 'ApprovalRequest',
  APPROVAL_RESOLVED: 'ApprovalResolved',
  PROMPT_REQUEST: 'PromptRequest',
  PROMPT_ANSWERED: 'PromptAnswered',
  SESSION_CREATED: 'SessionCreated',
  TURN_COMPLETE: 'TurnComplete',
  HARNESS_ERROR: 'HarnessError',
  SESSION_UPDATED: 'SessionUpdated',
};

@InterfaceType({
  description: 'One event of a harness session, in the order the mesh committed it. Pass `cursor` as `after` to resume with nothing missed.',
  resolveType: (value: { __typename?: string }) => value.__typename,
})
export abstract class HarnessEvent {
  @Field({ description: 'Opaque position in the harness stream; resume with `after: cursor`.' })
  cursor!: string;

  @Field(() => ID, { description: 'The canonical SessionId.' })
  sessionId!: string;

  @Field(() => Date)
  at!: Date;

  @Field(() => Int, { description: 'Per-session sequence minted by the mesh: 1, 2, 3, … with no gap.' })
  seq!: number;

  @Field(() => ID)
  harnessId!: string;

  @Field(() => ID, { nullable: true, description: 'The turn the event belongs to.' })
  turnId!: string | null;

  @Field(() => ID, { nullable: true, description: 'The task whose session this is.' })
  taskId!: string | null;

  __typename!: string;
}

@ObjectType({ implements: HarnessEvent, description: 'A piece of the assistant\'s answer text.' })
export class AssistantDelta extends HarnessEvent {
  @Field()
  text!: string;

  @Field(() => String, { nullable: true })
  messageId!: string | null;

  @Field({ description: 'The text was cut to 4096 characters; the transcript has it whole.' })
  truncated!: boolean;
}

@ObjectType({ implements: HarnessEvent, description: "A piece of the model's reasoning." })
export class ReasoningDelta extends HarnessEvent {
  @Field()
  text!: string;

  @Field()
  truncated!: boolean;
}

@ObjectType({ implements: HarnessEvent, description: 'The CLI called one of its tools.' })
export class ToolUse extends HarnessEvent {
  @Field()
  toolUseId!: string;

  @Field()
  name!: string;

  @Field(() => GraphQLJSON, { nullable: true })
  input!: unknown;

  @Field()
  truncated!: boolean;
}

@ObjectType({ implements: HarnessEvent, description: "A tool call's result." })
export class ToolResult extends HarnessEvent {
  @Field()
  toolUseId!: string;

  @Field()
  output!: string;

  @Field()
  isError!: boolean;

  @Field()
  truncated!: boolean;
}

@ObjectType({ implements: HarnessEvent, description: 'The CLI was refused a tool under its permission mode; answer with resolveApproval.' })
export class ApprovalRequest extends HarnessEvent {
  @Field(() => ID)
  requestId!: string;

  @Field()
  toolName!: string;

  @Field(() => GraphQLJSON, { nullable: true })
  input!: unknown;

  @Field()
  reason!: string;
}

@ObjectType({ implements: HarnessEvent })
export class ApprovalResolved extends HarnessEvent {
  @Field(() => ID)
  requestId!: string;

  @Field(() => ApprovalDecisionEnum)
  decision!: ApprovalDecision;
}

@ObjectType({ implements: HarnessEvent, description: 'The CLI asked the user a question (not a tool permission); answer with answerPrompt, which runs the answer as the next turn.' })
export class PromptRequest extends HarnessEvent {
  @Field(() => ID)
  promptId!: string;

  @Field()
  question!: string;

  @Field(() => String, { nullable: true, description: 'A short label of the question, as the CLI gave it.' })
  header!: string | null;

  @Field(() => [PromptOption])
  options!: PromptOption[];

  @Field({ description: 'Whether the question takes several of its options.' })
  multiSelect!: boolean;
}

@ObjectType({ implements: HarnessEvent, description: 'A prompt was answered (answerPrompt); the answer runs as the turn that follows.' })
export class PromptAnswered extends HarnessEvent {
  @Field(() => ID)
  promptId!: string;

  @Field()
  text!: string;
}

@ObjectType({ implements: HarnessEvent, description: 'The mesh started, adopted or spawned (task) the session.' })
export class SessionCreated extends HarnessEvent {
  @Field(() => ID, { nullable: true })
  projectId!: string | null;

  @Field(() => String, { nullable: true })
  cwd!: string | null;

  @Field(() => String, { nullable: true })
  title!: string | null;

  @Field({ description: '`started`, `adopted` or `task`.' })
  origin!: string;
}

@ObjectType({ implements: HarnessEvent, description: "A turn ended; the session takes the next one. Always a turn's last event." })
export class TurnComplete extends HarnessEvent {
  @Field(() => TurnStatusEnum)
  status!: TurnStatus;

  @Field(() => Int, { nullable: true })
  exitCode!: number | null;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field(() => String, { nullable: true, description: "The CLI's final answer text (cut to 4096 characters)." })
  result!: string | null;

  @Field(() => Int, { nullable: true })
  durationMs!: number | null;
}

@ObjectType({ implements: HarnessEvent, description: 'The CLI reported an error (the turn may still complete).' })
export class HarnessError extends HarnessEvent {
  @Field()
  code!: string;

  @Field()
  message!: string;
}

@ObjectType({ implements: HarnessEvent, description: 'The session changed; with previousSessionId, it now continues under this id (rotation).' })
export class SessionUpdated extends HarnessEvent {
  @Field(() => ID, { nullable: true })
  previousSessionId!: string | null;

  @Field(() => String, { nullable: true, description: "The session's status now (`rotated` on the predecessor's side of a rotation)." })
  sessionStatus!: string | null;

  @Field(() => String, { nullable: true })
  title!: string | null;
}

export const harnessEventTypesList = [AssistantDelta, ReasoningDelta, ToolUse, ToolResult, ApprovalRequest, ApprovalResolved, PromptRequest, PromptAnswered, SessionCreated, TurnComplete, HarnessError, SessionUpdated];

/** The GraphQL object of an event of the `harness` stream. */
export function toEventObject(env: EventEnvelope<Record<string, unknown>>): HarnessEvent {
  const e = toHarnessEvent(env);
  const p = e.payload as Record<string, unknown>;
  const base = { cursor: e.cursor, sessionId: e.sessionId, at: e.at, seq: e.seq, harnessId: e.harnessId, turnId: e.turnId, taskId: e.taskId, __typename: typeNames[e.type] };
  const nul = (v: unknown) => (v === undefined ? null : v);
  switch (e.type) {
    case 'ASSISTANT_DELTA':
      return Object.assign(new AssistantDelta(), base, { text: p.text ?? '', messageId: nul(p.messageId), truncated: p.truncated === true });
    case 'REASONING_DELTA':
      return Object.assign(new ReasoningDelta(), base, { text: p.text ?? '', truncated: p.truncated === true });
    case 'TOOL_USE':
      return Object.assign(new ToolUse(), base, { toolUseId: p.toolUseId ?? '', name: p.name ?? '', input: nul(p.input), truncated: p.truncated === true });
    case 'TOOL_RESULT':
      return Object.assign(new ToolResult(), base, { toolUseId: p.toolUseId ?? '', output: p.output ?? '', isError: p.isError === true, truncated: p.truncated === true });
    case 'APPROVAL_REQUEST':
      return Object.assign(new ApprovalRequest(), base, { requestId: p.requestId, toolName: p.toolName, input: nul(p.input), reason: p.reason ?? '' });
    case 'APPROVAL_RESOLVED':
      return Object.assign(new ApprovalResolved(), base, { requestId: p.requestId, decision: p.decision });
    case 'PROMPT_REQUEST':
      return Object.assign(new PromptRequest(), base, {
        promptId: p.promptId,
        question: p.question ?? '',
        header: nul(p.header),
        options: ((p.options as { label: string; description?: string | null }[] | undefined) ?? []).map((o) => Object.assign(new PromptOption(), { label: o.label, description: o.description ?? null })),
        multiSelect: p.multiSelect === true,
      });
    case 'PROMPT_ANSWERED':
      return Object.assign(new PromptAnswered(), base, { promptId: p.promptId, text: p.text ?? '' });
    case 'SESSION_CREATED':
      return Object.assign(new SessionCreated(), base, { projectId: nul(p.projectId), cwd: nul(p.cwd), title: nul(p.title), origin: p.origin ?? 'started' });
    case 'TURN_COMPLETE':
      return Object.assign(new TurnComplete(), base, { status: p.status, exitCode: nul(p.exitCode), error: nul(p.error), result: nul(p.result), durationMs: nul(p.durationMs) });
    case 'HARNESS_ERROR':
      return Object.assign(new HarnessError(), base, { code: p.code ?? 'ERROR', message: p.message ?? '' });
    case 'SESSION_UPDATED':
      return Object.assign(new SessionUpdated(), base, { previousSessionId: nul(p.previousSessionId), sessionStatus: nul(p.status), title: nul(p.title) });
  }
}
