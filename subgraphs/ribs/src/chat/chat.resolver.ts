import { byId, IDEMPOTENCY_KEY, whole } from '@keelson/platform';
import { parseInput, RequiresScope } from '@keelson/kit';
import type { ChatMessageRecord, ChatRecord, ChatsServices } from '@keelson/chats';
import { callerKey, cursorSchema, isUuid, MeshError, streams, type Caller, type ChatEventPayload, type EventEnvelope } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import type { RibsContext } from '../context';
import { ribEntity } from '../rib/rib.mapping';
import { Rib } from '../rib/rib.type';
import { JSONScalar, SteerResult, steerResult } from '@keelson/kit';
import type { ChatCommandOutcome } from '@keelson/chats';
import { Chat, ChatCommandEffectKind, ChatCommandResult, ChatCommandSeed, ChatConnection, ChatEvent, ChatMessage, ChatMessageConnection, ChatTurn, StartChatInput } from './chat.type';

/** The chats domain, or SERVICE_UNAVAILABLE where this subgraph runs without it (no Temporal wiring). */
function chats(ctx: RibsContext): ChatsServices {
  if (!ctx.services.chats) throw new MeshError('SERVICE_UNAVAILABLE', 'chats are not served here: the ribs subgraph was started without Temporal (its runs wiring)');
  return ctx.services.chats;
}

function toChat(r: ChatRecord, services: ChatsServices): Chat {
  return Object.assign(new Chat(), {
    id: r.id,
    title: r.title,
    ribId: r.ribId,
    agent: r.agent,
    status: r.status,
    error: r.error,
    turns: r.turns,
    tools: r.tools,
    projectId: r.projectId,
    temporalWorkflowId: r.temporalWorkflowId,
    temporalUiUrl: services.chats.temporalUiUrl(r.temporalWorkflowId),
    createdAt: r.createdAt,
  });
}

const toMessage = (m: ChatMessageRecord): ChatMessage => Object.assign(new ChatMessage(), { id: m.id, turnId: m.turnId, role: m.role, text: m.text, createdAt: m.createdAt });

function toEvent(e: EventEnvelope<ChatEventPayload>): ChatEvent {
  const p = e.payload;
  return Object.assign(new ChatEvent(), {
    cursor: e.cursor,
    chatId: e.key,
    type: e.type,
    turnId: p.turnId ?? null,
    messageId: p.messageId ?? null,
    role: p.role ?? null,
    text: p.text ?? null,
    tool: p.tool ?? null,
    toolUseId: p.toolUseId ?? null,
    isError: p.isError ?? null,
    approvalId: p.approvalId ?? null,
    approved: p.approved ?? null,
    status: p.status ?? null,
    error: p.error ?? null,
    ribId: p.ribId ?? null,
    command: p.command ?? null,
    effect: p.effect ?? null,
    at: e.at,
  });
}

function toCommandResult(o: ChatCommandOutcome): ChatCommandResult {
  const r: ChatCommandResult = Object.assign(new ChatCommandResult(), { ok: o.ok, error: null, effect: null, markdown: null, ribId: null, agent: null, seed: null, workflow: null, args: null });
  if (!o.ok) return Object.assign(r, { error: o.error });
  r.effect = ChatCommandEffectKind[o.effect];
  if (o.effect === 'MESSAGE') r.markdown = o.markdown;
  if (o.effect === 'RUN_WORKFLOW') Object.assign(r, { workflow: o.workflow, args: o.args });
  if (o.effect === 'OPEN_CHAT') {
    Object.assign(r, { ribId: o.ribId, agent: o.agent, seed: Object.assign(new ChatCommandSeed(), { name: o.seed.name, systemPrompt: o.seed.systemPrompt, openingPrompt: o.seed.openingPrompt ?? null }) });
  }
  return r;
}

/** The caller a chat's turns act as (its tools see this caller). */
function starter(ctx: RibsContext): Caller {
  const c = ctx.caller;
  return { subject: c.subject, kind: c.kind, scopes: [...c.scopes], ...(c.tokenId ? { tokenId: c.tokenId } : {}) };
}

@Resolver(() => Chat)
export class ChatResolver {
  @RequiresScope('read')
  @Query(() => Chat, { nullable: true })
  async chat(@Ctx() ctx: RibsContext, @Arg('id', () => ID) id: string): Promise<Chat | null> {
    const services = chats(ctx);
    if (!isUuid(id)) return null;
    const [r] = await services.chats.byIds([id]);
    return r ? toChat(r, services) : null;
  }

  @RequiresScope('read')
  @Query(() => ChatConnection, { description: 'Chats, newest first.' })
  async chats(
    @Ctx() ctx: RibsContext,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<ChatConnection> {
    const services = chats(ctx);
    const page = await services.chats.list({ first, after });
    const edges = page.rows.slice(0, page.first).map((r) => ({ cursor: String(r.seq), node: toChat(r, services) }));
    return { edges, pageInfo: { hasNextPage: page.rows.length > page.first, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @FieldResolver(() => Rib, { nullable: true, description: 'The rib whose agent or tools it uses.' })
  rib(@Root() chat: Chat, @Ctx() ctx: RibsContext): Rib | null {
    return chat.ribId ? ribEntity(ctx.services.host, chat.ribId) : null;
  }

  @FieldResolver(() => ChatMessageConnection, { description: 'Its messages, oldest first.' })
  async messages(
    @Root() chat: Chat,
    @Ctx() ctx: RibsContext,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<ChatMessageConnection> {
    const services = chats(ctx);
    const [record] = await services.chats.byIds([chat.id]);
    if (!record) return { edges: [], pageInfo: { hasNextPage: false, endCursor: null } };
    const page = await services.chats.messages(record, { first, after });
    const edges = page.rows.slice(0, page.first).map((m) => ({ cursor: String(m.seq), node: toMessage(m) }));
    return { edges, pageInfo: { hasNextPage: page.rows.length > page.first, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @RequiresScope('write')
  @Mutation(() => Chat, {
    description:
      'Starts a chat — from a rib agent, a rib command that opens one, an open-chat seed, or plain — and sends its first message (`text`, else the seed\'s opening prompt). An unknown rib or agent is NOT_FOUND, a command that does not open an agent BAD_USER_INPUT; either creates nothing.',
  })
  async startChat(
    @Ctx() ctx: RibsContext,
    @Arg('input', () => StartChatInput) input: StartChatInput,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<Chat> {
    const services = chats(ctx);
    const raw = JSON.parse(JSON.stringify(input)) as unknown;
    const call = { caller: ctx.caller, mutation: 'startChat', key: idempotencyKey, input: raw };
    const chatById = byId(async (id) => {
      const [r] = await services.chats.byIds([id]);
      return r ? toChat(r, services) : null;
    });
    return services.idempotency.run(call, chatById, async () => toChat((await services.chats.start(raw, starter(ctx))).chat, services));
  }

  @RequiresScope('write')
  @Mutation(() => ChatTurn, { description: 'One message; the agent answers it as a turn (follow chatEvents). TURN_IN_FLIGHT while the chat answers another; the same idempotencyKey is one message.' })
  async sendChatMessage(
    @Ctx() ctx: RibsContext,
    @Arg('chatId', () => ID) chatId: string,
    @Arg('text') text: string,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<ChatTurn> {
    const services = chats(ctx);
    const call = { caller: ctx.caller, mutation: 'sendChatMessage', key: idempotencyKey, input: { chatId, text } };
    // Caller-scoped: another caller's same key is another message.
    const dedupe = idempotencyKey ? `${callerKey(ctx.caller)}\u0000${idempotencyKey}` : null;
    const turn = await services.idempotency.run(call, whole(), () => services.chats.send(chatId, text, dedupe, starter(ctx)));
    return Object.assign(new ChatTurn(), turn);
  }

  @RequiresScope('write')
  @Mutation(() => SteerResult, {
    description:
      'A steer note for the turn the chat is answering: read before its next model call, after its current tool round (seed 002\'s /steer), and shown as CHAT_STEERED. REJECTED with the reason when no turn runs.',
  })
  async steerChat(
    @Ctx() ctx: RibsContext,
    @Arg('chatId', () => ID) chatId: string,
    @Arg('note') note: string,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<SteerResult> {
    const services = chats(ctx);
    const call = { caller: ctx.caller, mutation: 'steerChat', key: idempotencyKey, input: { chatId, note } };
    const dedupe = idempotencyKey ? `${callerKey(ctx.caller)}\u0000${idempotencyKey}` : null;
    const answer = await services.idempotency.run<Awaited<ReturnType<typeof services.chats.steer>>>(call, whole(), () => services.chats.steer(chatId, note, dedupe, starter(ctx)));
    return steerResult(answer.status, answer.reason);
  }

  @RequiresScope('write')
  @Mutation(() => ChatCommandResult, {
    description:
      'Runs a rib\'s slash command (Rib.commands) from a chat (recorded there as CHAT_COMMAND) or without one, and returns its effect typed for the frontend to perform; a command the rib refuses is ok: false.',
  })
  async runChatCommand(
    @Ctx() ctx: RibsContext,
    @Arg('ribId', () => ID) ribId: string,
    @Arg('name', () => String) name: string,
    @Arg('chatId', () => ID, { nullable: true }) chatId?: string | null,
    @Arg('args', () => JSONScalar, { nullable: true, description: 'The command\'s one text argument (a JSON string), or null.' }) args?: unknown,
  ): Promise<ChatCommandResult> {
    return toCommandResult(await chats(ctx).chats.runCommand(chatId, { ribId, name, args }));
  }

  @RequiresScope('read')
  @Subscription(() => ChatEvent, {
    description: 'One chat\'s events from the mesh\'s own event log: replays what followed `after`, then follows live, nothing missed and nothing twice.',
    subscribe: async ({ args, context }) => {
      const ctx = context as RibsContext;
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      const chatId = args.chatId as string;
      const services = chats(ctx);
      if (!isUuid(chatId) || (await services.chats.byIds([chatId])).length === 0) throw new MeshError('NOT_FOUND', `chat ${JSON.stringify(chatId)} does not exist`);
      return services.events.tail(streams.chats, after, { key: chatId });
    },
  })
  chatEvents(
    @Root() event: EventEnvelope<ChatEventPayload>,
    @Arg('chatId', () => ID) _chatId: string,
    @Arg('after', () => String, { nullable: true }) _after?: string | null,
  ): ChatEvent {
    return toEvent(event);
  }
}
