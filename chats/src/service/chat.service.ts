import { createHash, randomUUID } from 'node:crypto';
import { actorOf, CHAT_MESSAGE_MAX_CHARS, CHAT_STEER_MAX_CHARS, isUuid, MeshError, parseInput, startChatInputSchema, type Caller, type ParsedStartChatInput } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { z } from 'zod';
import type { ChatsExecutor } from '../executor';
import type { ChatMessageRecord, ChatRecord, ChatStore } from '../store/chatStore';

/** A seed a chat starts from: an agent's (`resolveAgent`) or an `open-chat` effect's. */
export interface ChatSeed {
  systemPrompt: string;
  name: string;
  openingPrompt?: string;
  model?: string;
  providerId?: string;
}

/** A rib command's effect as the rib host resolved it (the rib contract's closed set). */
export type RibCommandEffect =
  | { effect: 'message'; markdown: string }
  | { effect: 'open-agent'; ribId: string; slug: string }
  | { effect: 'run-workflow'; workflow: string; args?: string };

/** What a command run from a chat resolved to, typed for the frontend that performs it. */
export type ChatCommandOutcome =
  | { ok: false; error: string }
  | { ok: true; effect: 'MESSAGE'; markdown: string }
  | { ok: true; effect: 'OPEN_CHAT'; ribId: string; agent: string; seed: ChatSeed }
  | { ok: true; effect: 'RUN_WORKFLOW'; workflow: string; args: string | null };

/** What the chats domain asks of the rib host: agents' seeds, a rib's tools, its commands. */
export interface ChatRibs {
  /** Resolves a rib's slash command to its effect; NOT_FOUND when the rib is not active. */
  invokeCommand(ribId: string, name: string, arg: string): Promise<{ ok: true; effect: RibCommandEffect } | { ok: false; error: string }>;
  /** The agent's seed; null when the rib has no such agent. NOT_FOUND when the rib is not active. */
  resolveAgent(ribId: string, slug: string): Promise<ChatSeed | null>;
  /** The tools a chat with this rib may use (its own); null when the rib is not active. */
  ribTools(ribId: string): readonly string[] | null;
}

export interface ChatServiceDeps {
  store: ChatStore;
  executor: ChatsExecutor;
  ribs: ChatRibs;
  log: Logger;
}

/** A turn a message opened. */
export interface ChatTurnView {
  id: string;
  chatId: string;
  messageId: string;
}

const idSchema = z.string().refine(isUuid, 'expected a chat id');
const textSchema = z
  .string()
  .refine((s) => s.trim() !== '', 'must not be empty')
  .pipe(z.string().max(CHAT_MESSAGE_MAX_CHARS, `must be at most ${CHAT_MESSAGE_MAX_CHARS} characters`));
const commandSchema = z.object({
  ribId: z.string().min(1).max(64),
  name: z.string().regex(/^[a-z][a-z0-9-]{0,63}$/, 'a command name is lowercase kebab-case'),
  // A command takes one text argument (JSON: a string, or null for none).
  args: z
    .union([z.string().max(4000, 'is at most 4000 characters'), z.null(), z.undefined()], { error: 'a command takes one text argument: a string, or null' })
    .transform((a) => a ?? ''),
});
const noteSchema = z
  .string()
  .refine((s) => s.trim() !== '', 'must not be empty')
  .pipe(z.string().max(CHAT_STEER_MAX_CHARS, `must be at most ${CHAT_STEER_MAX_CHARS} characters`));
const pageSchema = z.object({
  first: z.number().int().min(0).max(200).nullish().transform((v) => v ?? 50),
  after: z.string().regex(/^(0|[1-9][0-9]{0,14})$/, 'expected a cursor previously received from this connection').nullish(),
});

function titleOf(input: ParsedStartChatInput, seed: ChatSeed | null): string {
  if (seed) return seed.name;
  const first = (input.text ?? '').trim().split('\n')[0] ?? '';
  return first ? first.slice(0, 80) : 'chat';
}

/**
 * The chats domain (seed 000's chat surface): a conversation with an agent — a rib's named agent, an
 * `open-chat` seed, or none — as one durable workflow that answers one message at a time with the
 * rib's tools on the `chat` policy surface.
 */
export class ChatService {
  constructor(private readonly deps: ChatServiceDeps) {}

  async byIds(ids: readonly string[]): Promise<ChatRecord[]> {
    return this.deps.store.byIds(ids.filter(isUuid));
  }

  async require(id: string): Promise<ChatRecord> {
    const chatId = parseInput(idSchema, id, 'chatId');
    const chat = await this.deps.store.get(chatId);
    if (!chat) throw new MeshError('NOT_FOUND', `chat ${JSON.stringify(id)} does not exist`);
    return chat;
  }

  async list(args: { first?: number | null; after?: string | null }): Promise<{ rows: ChatRecord[]; first: number }> {
    const page = parseInput(pageSchema, args);
    const rows = await this.deps.store.list({ first: page.first + 1, ...(page.after != null ? { beforeSeq: Number(page.after) } : {}) });
    return { rows, first: page.first };
  }

  async messages(chat: ChatRecord, args: { first?: number | null; after?: string | null }): Promise<{ rows: ChatMessageRecord[]; first: number }> {
    const page = parseInput(pageSchema, args);
    const rows = await this.deps.store.messages(chat.id, { first: page.first + 1, ...(page.after != null ? { afterSeq: Number(page.after) } : {}) });
    return { rows, first: page.first };
  }

  temporalUiUrl(workflowId: string): string | null {
    return this.deps.executor.uiUrl(workflowId);
  }

  /** The seed, rib, agent and tools of the chat `input` asks for; nothing is written. */
  private async resolve(input: ParsedStartChatInput): Promise<{ seed: ChatSeed | null; tools: string[]; ribId: string | null; agent: string | null }> {
    let seed: ChatSeed | null = input.openChatSeed ?? null;
    let ribId = input.ribId ?? null;
    let agent = input.agent ?? null;
    if (ribId && input.command) {
      // The command runs like runChatCommand's; only an effect that opens an agent starts a chat.
      const outcome = await this.commandOutcome(ribId, input.command.name, input.command.arg);
      if (!outcome.ok) throw new MeshError('BAD_USER_INPUT', `command /${input.command.name} of rib ${ribId} refused: ${outcome.error}`);
      if (outcome.effect !== 'OPEN_CHAT') {
        throw new MeshError('BAD_USER_INPUT', `command /${input.command.name} of rib ${ribId} has a ${outcome.effect} effect, not OPEN_CHAT: run it with runChatCommand`);
      }
      ({ ribId, agent, seed } = outcome);
    } else if (ribId && agent) {
      if (!this.deps.ribs.ribTools(ribId)) throw new MeshError('NOT_FOUND', `rib ${JSON.stringify(ribId)} is not active`);
      seed = await this.deps.ribs.resolveAgent(ribId, agent);
      if (!seed) throw new MeshError('NOT_FOUND', `rib ${ribId} has no agent ${JSON.stringify(agent)}`);
    }
    let tools: string[] = [];
    if (ribId) {
      const ribTools = this.deps.ribs.ribTools(ribId);
      if (!ribTools) throw new MeshError('NOT_FOUND', `rib ${JSON.stringify(ribId)} is not active`);
      tools = [...ribTools];
    }
    return { seed, tools, ribId, agent };
  }

  /**
   * Starts a chat and, when it has a first message (`text`, else the seed's opening prompt), sends
   * it. Bad input (an unknown rib or agent) changes nothing; a chat whose workflow cannot start is
   * FAILED and the call SERVICE_UNAVAILABLE. A chat's workflow starts with its first message.
   */
  async start(raw: unknown, caller: Caller | null): Promise<{ chat: ChatRecord; turn: ChatTurnView | null }> {
    const input = parseInput(startChatInputSchema, raw);
    const { seed, tools, ribId, agent } = await this.resolve(input);
    const chatId = randomUUID();
    const workflowId = this.deps.executor.chatWorkflowId(chatId);
    const title = titleOf(input, seed);
    await this.deps.store.create({
      id: chatId,
      title,
      ribId,
      agent,
      projectId: input.projectId ?? null,
      systemPrompt: seed?.systemPrompt ?? null,
      provider: seed?.providerId ?? null,
      model: seed?.model ?? null,
      tools,
      startedBy: caller,
      temporalWorkflowId: workflowId,
    });
    const first = input.text ?? seed?.openingPrompt;
    let turn: ChatTurnView | null = null;
    if (first) {
      try {
        turn = await this.sendTo((await this.deps.store.get(chatId))!, first, null, caller);
      } catch (err) {
        if (err instanceof MeshError) throw err;
        await this.deps.store.fail(chatId, (err as Error).message);
        throw new MeshError('SERVICE_UNAVAILABLE', `chat ${chatId} could not start: ${(err as Error).message}`);
      }
    }
    return { chat: (await this.deps.store.get(chatId))!, turn };
  }

  /**
   * Runs a rib's slash command, from a chat (`chatId`, recorded there as CHAT_COMMAND) or the
   * composer, and returns its effect typed: an `open-agent` becomes OPEN_CHAT with the agent's seed
   * (start it with `startChat`), `run-workflow` RUN_WORKFLOW, `message` MESSAGE. A command the rib
   * refuses is `ok: false` with its error; bad input and an unknown chat or rib change nothing.
   */
  async runCommand(chatId: string | null | undefined, raw: { ribId: string; name: string; args: unknown }): Promise<ChatCommandOutcome> {
    const input = parseInput(commandSchema, raw);
    const chat = chatId == null ? null : await this.require(chatId);
    const outcome = await this.commandOutcome(input.ribId, input.name, input.args);
    if (chat) {
      await this.deps.store.recordCommand(chat.id, {
        ribId: input.ribId,
        command: input.name,
        ...(outcome.ok ? { effect: outcome.effect } : { error: outcome.error }),
        ...(outcome.ok && outcome.effect === 'MESSAGE' ? { text: outcome.markdown } : {}),
      });
    }
    return outcome;
  }

  private async commandOutcome(ribId: string, name: string, arg: string): Promise<ChatCommandOutcome> {
    const invoked = await this.deps.ribs.invokeCommand(ribId, name, arg);
    if (!invoked.ok) return invoked;
    const e = invoked.effect;
    if (e.effect === 'message') return { ok: true, effect: 'MESSAGE', markdown: e.markdown };
    if (e.effect === 'run-workflow') return { ok: true, effect: 'RUN_WORKFLOW', workflow: e.workflow, args: e.args ?? null };
    const seed = await this.deps.ribs.resolveAgent(e.ribId, e.slug);
    if (!seed) return { ok: false, error: `rib ${e.ribId} has no agent ${JSON.stringify(e.slug)}` };
    return { ok: true, effect: 'OPEN_CHAT', ribId: e.ribId, agent: e.slug, seed };
  }

  /**
   * One message: TURN_IN_FLIGHT while the chat answers another, CONFLICT once it failed.
   * @param dedupe a caller-scoped key: the same one is one message (the executor's Update id is its hash)
   */
  async send(id: string, rawText: string, dedupe: string | null, caller: Caller | null): Promise<ChatTurnView> {
    const text = parseInput(textSchema, rawText, 'text');
    const chat = await this.require(id);
    return this.sendTo(chat, text, dedupe ? createHash('sha256').update(dedupe).digest('hex') : null, caller);
  }

  /**
   * A steer note for the turn the chat is answering: the turn reads it before its next model call
   * (after its current tool round). ACCEPTED into the live turn, or REJECTED with the reason when no
   * turn runs. BAD_USER_INPUT for an empty or long note.
   * @param dedupe a caller-scoped key: the same one is one note
   */
  async steer(id: string, rawNote: string, dedupe: string | null, caller: Caller | null): Promise<{ status: 'ACCEPTED' | 'REJECTED'; reason: string | null }> {
    const note = parseInput(noteSchema, rawNote, 'note');
    const chat = await this.require(id);
    if (chat.status !== 'RESPONDING') return { status: 'REJECTED', reason: `chat ${chat.id} is not answering a message (${chat.status}): send one instead` };
    const key = dedupe ? createHash('sha256').update(dedupe).digest('hex') : null;
    const r = await this.deps.executor.steer(chat.temporalWorkflowId, { note, actor: caller ? `${actorOf(caller).kind}:${caller.subject}` : null }, key);
    if (r.outcome === 'accepted') return { status: 'ACCEPTED', reason: `read by turn ${r.turnId} before its next model call` };
    if (r.outcome === 'not-running') return { status: 'REJECTED', reason: `chat ${chat.id} is not answering a message: send one instead` };
    if (r.code === 'CONFLICT') return { status: 'REJECTED', reason: r.message };
    throw new MeshError(r.code, r.message);
  }

  private async sendTo(chat: ChatRecord, text: string, key: string | null, caller: Caller | null): Promise<ChatTurnView> {
    if (chat.status === 'FAILED') throw new MeshError('CONFLICT', `chat ${chat.id} has failed (${chat.error ?? 'no reason recorded'}); start another`);
    const launch = { workflowId: chat.temporalWorkflowId, chatId: chat.id, title: chat.title, rib: chat.ribId };
    const sent = await this.deps.executor.send(launch, { text, actor: caller ? `${actorOf(caller).kind}:${caller.subject}` : null }, key);
    if (sent.outcome === 'accepted') return { id: sent.turnId, chatId: chat.id, messageId: sent.messageId };
    throw new MeshError(sent.code, sent.message);
  }
}
