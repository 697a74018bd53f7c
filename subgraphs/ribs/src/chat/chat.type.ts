import { PageInfo } from '@keelson/kit';
import { Directive, Field, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';

@ObjectType({ description: 'A message of a chat: the user\'s, or the agent\'s answer.' })
export class ChatMessage {
  @Field(() => ID)
  id!: string;

  @Field(() => ID, { description: 'The turn it belongs to (a user message opens one; the answer settles it).' })
  turnId!: string;

  @Field({ description: 'USER or ASSISTANT.' })
  role!: string;

  @Field()
  text!: string;

  @Field(() => Date)
  createdAt!: Date;
}

@ObjectType()
export class ChatMessageEdge {
  @Field({ description: 'Resume with `after: cursor`.' })
  cursor!: string;

  @Field(() => ChatMessage)
  node!: ChatMessage;
}

@ObjectType()
export class ChatMessageConnection {
  @Field(() => [ChatMessageEdge])
  edges!: ChatMessageEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

@Directive('@key(fields: "id")')
@ObjectType({ description: 'A conversation with an agent (seed 000\'s chat surface): one workflow, one turn at a time, the rib\'s tools on the `chat` policy surface.' })
export class Chat {
  @Field(() => ID)
  id!: string;

  @Field()
  title!: string;

  ribId!: string | null;

  @Field(() => String, { nullable: true, description: 'The rib agent\'s slug it was started from.' })
  agent!: string | null;

  @Field({ description: 'IDLE, RESPONDING (a turn runs) or FAILED.' })
  status!: string;

  @Field(() => String, { nullable: true, description: 'Why it failed, when it did.' })
  error!: string | null;

  @Field(() => Int, { description: 'Turns answered.' })
  turns!: number;

  @Field(() => [String], { description: 'The tools its turns may use (its rib\'s own; none for a chat without a rib).' })
  tools!: string[];

  @Field(() => ID, { nullable: true })
  projectId!: string | null;

  @Field({ description: 'The workflow id of its turns in Temporal (`chat-<id>`).' })
  temporalWorkflowId!: string;

  @Field(() => String, { nullable: true, description: 'Its page in the Temporal UI, when the mesh knows where that is.' })
  temporalUiUrl!: string | null;

  @Field(() => Date)
  createdAt!: Date;
}

@ObjectType()
export class ChatEdge {
  @Field()
  cursor!: string;

  @Field(() => Chat)
  node!: Chat;
}

@ObjectType()
export class ChatConnection {
  @Field(() => [ChatEdge])
  edges!: ChatEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

@ObjectType({ description: 'A message sent: the turn it opened; follow it with chatEvents.' })
export class ChatTurn {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  chatId!: string;

  @Field(() => ID, { description: 'The user message\'s id.' })
  messageId!: string;
}

@InputType({ description: 'An open-chat seed (a rib command\'s `open-chat` effect, or your own).' })
export class OpenChatSeedInput {
  @Field()
  systemPrompt!: string;

  @Field()
  name!: string;

  @Field(() => String, { nullable: true })
  openingPrompt?: string | null;

  @Field(() => String, { nullable: true })
  model?: string | null;

  @Field(() => String, { nullable: true })
  providerId?: string | null;
}

@InputType({ description: 'A chat from a rib agent (`ribId` + `agent`), from a rib command that opens an agent (`ribId` + `command`), from a seed (optionally with `ribId` for its tools), or plain; `text` is the first message.' })
export class StartChatInput {
  @Field(() => ID, { nullable: true })
  ribId?: string | null;

  @Field(() => String, { nullable: true, description: 'The rib agent\'s slug (Rib.agents).' })
  agent?: string | null;

  @Field(() => String, {
    nullable: true,
    description: 'A rib command as typed, `/name argument` (Rib.commands); its effect must open an agent (OPEN_CHAT), else BAD_USER_INPUT and nothing is created.',
  })
  command?: string | null;

  @Field(() => OpenChatSeedInput, { nullable: true })
  openChatSeed?: OpenChatSeedInput | null;

  @Field(() => ID, { nullable: true })
  projectId?: string | null;

  @Field(() => String, { nullable: true, description: 'The first message (else the seed\'s opening prompt, else none).' })
  text?: string | null;
}

@ObjectType({ description: 'One event of a chat, in order: messages, a turn starting, tool calls and their results, approvals it waits on, the turn ending. Resume with `after: cursor`.' })
export class ChatEvent {
  @Field({ description: 'Opaque position in the mesh\'s chat stream.' })
  cursor!: string;

  @Field(() => ID)
  chatId!: string;

  @Field({
    description:
      'CHAT_STARTED, CHAT_MESSAGE, CHAT_TURN_STARTED, CHAT_TOOL_CALL, CHAT_TOOL_RESULT, CHAT_DELTA, CHAT_STEERED, CHAT_APPROVAL_OPENED, CHAT_APPROVAL_ANSWERED, CHAT_TURN_ENDED or CHAT_COMMAND.',
  })
  type!: string;

  @Field(() => ID, { nullable: true })
  turnId!: string | null;

  @Field(() => ID, { nullable: true, description: 'CHAT_MESSAGE: the message.' })
  messageId!: string | null;

  @Field(() => String, { nullable: true, description: 'CHAT_MESSAGE: USER or ASSISTANT.' })
  role!: string | null;

  @Field(() => String, {
    nullable: true,
    description: 'CHAT_MESSAGE, CHAT_DELTA, CHAT_TOOL_RESULT, CHAT_STEERED: the text (clipped; read Chat.messages for the whole); CHAT_APPROVAL_OPENED: the policy\'s reason.',
  })
  text!: string | null;

  @Field(() => String, { nullable: true, description: 'CHAT_TOOL_CALL, CHAT_APPROVAL_*: the tool.' })
  tool!: string | null;

  @Field(() => String, { nullable: true })
  toolUseId!: string | null;

  @Field(() => Boolean, { nullable: true })
  isError!: boolean | null;

  @Field(() => ID, { nullable: true, description: 'CHAT_APPROVAL_OPENED / CHAT_APPROVAL_ANSWERED: the inbox approval the turn waits on; answer it with answerApproval.' })
  approvalId!: string | null;

  @Field(() => Boolean, { nullable: true, description: 'CHAT_APPROVAL_ANSWERED: whether the answer allowed the call.' })
  approved!: boolean | null;

  @Field(() => String, { nullable: true, description: 'CHAT_TURN_ENDED: ok, error, aborted or timeout.' })
  status!: string | null;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field(() => ID, { nullable: true, description: 'CHAT_COMMAND: the rib whose command ran.' })
  ribId!: string | null;

  @Field(() => String, { nullable: true, description: 'CHAT_COMMAND: the command.' })
  command!: string | null;

  @Field(() => String, { nullable: true, description: 'CHAT_COMMAND: the effect it resolved to (ChatCommandEffectKind), null when the rib refused it.' })
  effect!: string | null;

  @Field(() => Date)
  at!: Date;
}

export enum ChatCommandEffectKind {
  OPEN_CHAT = 'OPEN_CHAT',
  OPEN_VIEW = 'OPEN_VIEW',
  RUN_WORKFLOW = 'RUN_WORKFLOW',
  MESSAGE = 'MESSAGE',
}
registerEnumType(ChatCommandEffectKind, {
  name: 'ChatCommandEffectKind',
  description:
    'What a command asks the frontend to do: OPEN_CHAT (startChat with ribId + agent), RUN_WORKFLOW (startWorkflow), MESSAGE (show markdown). OPEN_VIEW is reserved for a view-opening command effect, which the rib contract does not have yet.',
});

@ObjectType({ description: 'The agent seed an OPEN_CHAT effect opens.' })
export class ChatCommandSeed {
  @Field()
  name!: string;

  @Field()
  systemPrompt!: string;

  @Field(() => String, { nullable: true })
  openingPrompt!: string | null;
}

@ObjectType({ description: 'A rib command run from a chat: its typed effect, or the rib\'s error (ok false).' })
export class ChatCommandResult {
  @Field()
  ok!: boolean;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field(() => ChatCommandEffectKind, { nullable: true })
  effect!: ChatCommandEffectKind | null;

  @Field(() => String, { nullable: true, description: 'MESSAGE: the markdown to show.' })
  markdown!: string | null;

  @Field(() => ID, { nullable: true, description: 'OPEN_CHAT: the rib of the agent.' })
  ribId!: string | null;

  @Field(() => String, { nullable: true, description: 'OPEN_CHAT: the agent\'s slug.' })
  agent!: string | null;

  @Field(() => ChatCommandSeed, { nullable: true, description: 'OPEN_CHAT: the agent\'s seed.' })
  seed!: ChatCommandSeed | null;

  @Field(() => String, { nullable: true, description: 'RUN_WORKFLOW: the workflow\'s name.' })
  workflow!: string | null;

  @Field(() => String, { nullable: true, description: 'RUN_WORKFLOW: its $ARGUMENTS.' })
  args!: string | null;
}
