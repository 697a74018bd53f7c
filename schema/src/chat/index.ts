import { z } from 'zod';
import { isUuid } from '../ids';

/** A chat's state: waiting for a message, answering one, or failed for good (its reason on the row). */
export const chatStatuses = ['IDLE', 'RESPONDING', 'FAILED'] as const;
export type ChatStatus = (typeof chatStatuses)[number];

/** Who wrote a chat message. */
export const chatRoles = ['USER', 'ASSISTANT'] as const;
export type ChatRole = (typeof chatRoles)[number];

/** The `chats` stream's event types, keyed by chat id (schema/protocol/chats.md). */
export const chatEventTypes = ['CHAT_STARTED', 'CHAT_MESSAGE', 'CHAT_TURN_STARTED', 'CHAT_TOOL_CALL', 'CHAT_TOOL_RESULT', 'CHAT_DELTA', 'CHAT_STEERED', 'CHAT_APPROVAL_OPENED', 'CHAT_APPROVAL_ANSWERED', 'CHAT_TURN_ENDED', 'CHAT_COMMAND'] as const;
export type ChatEventType = (typeof chatEventTypes)[number];

/** An event's payload: the turn it belongs to and what the type carries. */
export interface ChatEventPayload {
  turnId?: string;
  /** CHAT_MESSAGE: the message's id and role. */
  messageId?: string;
  role?: ChatRole;
  /** CHAT_MESSAGE, CHAT_DELTA, CHAT_STEERED: text (clipped on the wire to the event log's bounds); CHAT_APPROVAL_OPENED: the policy's reason. */
  text?: string;
  /** CHAT_TOOL_CALL / CHAT_TOOL_RESULT: the tool's name and call id. */
  tool?: string;
  toolUseId?: string;
  isError?: boolean;
  /** CHAT_APPROVAL_OPENED / CHAT_APPROVAL_ANSWERED: the inbox approval (answerApproval) and, answered, whether it allowed the call. */
  approvalId?: string;
  approved?: boolean;
  /** CHAT_TURN_ENDED: `ok`, `error`, `aborted` or `timeout`, and the error when not ok. */
  status?: string;
  error?: string;
  /** CHAT_STARTED, CHAT_MESSAGE: the chat's rib and agent slug (when it has them); CHAT_COMMAND: the command's rib. */
  ribId?: string;
  agent?: string;
  /** CHAT_COMMAND: the command and the effect it resolved to (`ChatCommandEffect`), or its error. */
  command?: string;
  effect?: ChatCommandEffect;
}

/** The typed effects a command run from a chat resolves to; the frontend performs them. */
export const chatCommandEffects = ['OPEN_CHAT', 'OPEN_VIEW', 'RUN_WORKFLOW', 'MESSAGE'] as const;
export type ChatCommandEffect = (typeof chatCommandEffects)[number];

/** The chat workflow's Temporal messages. */
export const chatWorkflowMessages = {
  /** Update: one user message; rejected TURN_IN_FLIGHT while a turn runs. */
  send: 'chatSend',
  /** Query: whether a turn runs, and how many have run. */
  status: 'chatStatus',
  /** Update: a steer note for the turn in flight; refused when no turn runs. */
  steer: 'chatSteer',
  /** Query: the steer notes of a turn, in order (its activity reads them between tool rounds). */
  steerNotes: 'chatSteerNotes',
} as const;

/** `chatSend`'s argument: the message (the caller's actor rides along for the record). */
export interface ChatSendArgs {
  text: string;
  actor: string | null;
}

/** `chatSend`'s answer: the turn it opened and the user message's id. */
export interface ChatSendResult {
  turnId: string;
  messageId: string;
}

/** `chatSteer`'s argument: the note (the caller's actor rides along for the record). */
export interface ChatSteerArgs {
  note: string;
  actor: string | null;
}

/** The longest steer note. */
export const CHAT_STEER_MAX_CHARS = 4000;

/** The longest user message. */
export const CHAT_MESSAGE_MAX_CHARS = 100_000;

const seedSchema = z.strictObject({
  systemPrompt: z.string().min(1).max(8000),
  name: z.string().min(1).max(80),
  openingPrompt: z.string().min(1).max(CHAT_MESSAGE_MAX_CHARS).optional(),
  model: z.string().min(1).max(200).optional(),
  providerId: z.string().min(1).max(64).optional(),
});

/** A slash command as a composer sends it: `/name` and, after a space, its one text argument. */
export const chatCommandLineSchema = z
  .string()
  .max(4100)
  .transform((line, ctx) => {
    const m = /^\/([a-z][a-z0-9-]{0,63})(?:\s+([\s\S]*))?$/.exec(line.trim());
    if (!m) {
      ctx.addIssue({ code: 'custom', message: 'a command is "/name" or "/name argument" (a lowercase kebab-case name)' });
      return z.NEVER;
    }
    return { name: m[1]!, arg: (m[2] ?? '').trim() };
  });

/**
 * `startChat`'s input: from a rib's agent (`ribId` + `agent`), from a rib's command whose effect
 * opens an agent (`ribId` + `command`), from an `open-chat` seed (optionally owned by `ribId`, whose
 * tools it then gets), or a plain chat; `text` (or the seed's opening prompt) is the first message.
 */
export const startChatInputSchema = z
  .strictObject({
    ribId: z.string().min(1).max(64).nullish(),
    agent: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'an agent slug is lowercase letters, digits and -')
      .nullish(),
    command: chatCommandLineSchema.nullish(),
    openChatSeed: seedSchema.nullish(),
    projectId: z.string().refine(isUuid, 'expected a project id').nullish(),
    text: z.string().min(1).max(CHAT_MESSAGE_MAX_CHARS).nullish(),
  })
  .refine((i) => [i.agent, i.command, i.openChatSeed].filter((x) => x != null).length <= 1, { message: 'give one of an agent, a command or an openChatSeed', path: ['agent'] })
  .refine((i) => !i.agent || i.ribId, { message: 'an agent needs its ribId', path: ['ribId'] })
  .refine((i) => !i.command || i.ribId, { message: 'a command needs its ribId', path: ['ribId'] });
export type StartChatInput = z.input<typeof startChatInputSchema>;
export type ParsedStartChatInput = z.output<typeof startChatInputSchema>;
