// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { allHandlersFinished, ApplicationFailure, condition, continueAsNew, proxyActivities, setHandler, uuid4, workflowInfo } from '@temporalio/workflow';
import { CHAT_STEER_MAX_CHARS, type ChatSendResult } from '@keelson/schema';
import type { Activities } from '../activities';
import { chatSendUpdate, chatStatusQuery, chatSteerNotesQuery, chatSteerUpdate } from './chatMessages';

export interface ChatWorkflowInput {
  chatId: string;
  /** Heartbeat timeout of a turn: a lost worker is noticed within it. */
  heartbeatTimeoutMs: number;
  /** How long an idle chat keeps its workflow; the next message starts it again. */
  idleMs: number;
  /** Turns answered before this execution (continue-as-new). */
  turns?: number;
}

export interface ChatWorkflowResult {
  chatId: string;
  turns: number;
}

interface OpenTurn {
  turnId: string;
  messageId: string;
  replyId: string;
}

/** The code an activity failure carries (its ApplicationFailure's type), for the Update's caller. */
function asUpdateFailure(err: unknown): ApplicationFailure {
  let cause: unknown = err;
  while (cause && !(cause instanceof ApplicationFailure)) cause = (cause as { cause?: unknown }).cause;
  if (cause instanceof ApplicationFailure) return ApplicationFailure.create({ type: cause.type ?? 'INTERNAL', message: cause.message, nonRetryable: true });
  return ApplicationFailure.create({ type: 'INTERNAL', message: (err as Error).message, nonRetryable: true });
}

/**
 * A chat (`workflowTypes.chat`, id `chat-<chatId>`): one conversation, one turn at a time. The
 * `chatSend` Update records the user's message (an activity, so the caller's answer means it is
 * stored) and is refused TURN_IN_FLIGHT while a turn runs; the `chatTurn` activity answers it with
 * the chat's agent and tools. `chatSteer` adds a note to the turn in flight, which its activity reads
 * between tool rounds (`chatSteerNotes`). An idle chat ends after `idleMs` (the next message starts it again
 * with update-with-start); it continues as new before its history grows large.
 */
export async function chat(input: ChatWorkflowInput): Promise<ChatWorkflowResult> {
  const { chatOpenTurn, chatSettleTurn } = proxyActivities<Activities>({
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 10, nonRetryableErrorTypes: ['TURN_IN_FLIGHT', 'NOT_FOUND', 'BAD_USER_INPUT'] },
  });
  const { chatTurn } = proxyActivities<Activities>({
    startToCloseTimeout: '30 minutes',
    heartbeatTimeout: input.heartbeatTimeoutMs,
    retry: { maximumAttempts: 2, nonRetryableErrorTypes: ['CAPABILITY_UNSUPPORTED', 'NOT_FOUND'] },
  });

  let reserved: string | null = null;
  let pending: OpenTurn | null = null;
  let turns = input.turns ?? 0;
  /** The steer notes of the turn in flight (the turn's activity queries them between tool rounds). */
  let notes: { turnId: string; notes: string[] } | null = null;

  setHandler(
    chatSendUpdate,
    async ({ text }): Promise<ChatSendResult> => {
      const turn: OpenTurn = { turnId: uuid4(), messageId: uuid4(), replyId: uuid4() };
      reserved = turn.turnId;
      try {
        await chatOpenTurn({ chatId: input.chatId, turnId: turn.turnId, messageId: turn.messageId, text });
      } catch (err) {
        reserved = null;
        throw asUpdateFailure(err);
      }
      pending = turn;
      return { turnId: turn.turnId, messageId: turn.messageId };
    },
    {
      validator: ({ text }) => {
        if (typeof text !== 'string' || !text.trim()) throw ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: 'text: must not be empty', nonRetryable: true });
        if (reserved) {
          throw ApplicationFailure.create({ type: 'TURN_IN_FLIGHT', message: `chat ${input.chatId} is answering turn ${reserved}; send once it ends`, nonRetryable: true });
        }
      },
    },
  );
  setHandler(chatStatusQuery, () => ({ chatId: input.chatId, turnInFlight: reserved, turns }));
  setHandler(
    chatSteerUpdate,
    ({ note }) => {
      const turnId = reserved!;
      if (notes?.turnId !== turnId) notes = { turnId, notes: [] };
      notes.notes.push(note);
      return { turnId };
    },
    {
      validator: ({ note }) => {
        if (typeof note !== 'string' || !note.trim()) throw ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: 'note: must not be empty', nonRetryable: true });
        if (note.length > CHAT_STEER_MAX_CHARS) throw ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: `note: must be at most ${CHAT_STEER_MAX_CHARS} characters`, nonRetryable: true });
        if (!reserved) throw ApplicationFailure.create({ type: 'CONFLICT', message: `chat ${input.chatId} is not answering a message: send one instead`, nonRetryable: true });
      },
    },
  );
  setHandler(chatSteerNotesQuery, (turnId) => (notes?.turnId === turnId ? [...notes.notes] : []));

  for (;;) {
    if (!(await condition(() => reserved !== null, input.idleMs))) {
      await condition(allHandlersFinished);
      if (reserved === null) return { chatId: input.chatId, turns };
    }
    // The Update handler is storing the message; a failed store releases the reservation.
    await condition(() => pending !== null || reserved === null);
    // Set by the Update handler (TypeScript cannot see that from here).
    const turn = pending as OpenTurn | null;
    if (!turn) continue;
    pending = null;
    try {
      await chatTurn({ chatId: input.chatId, turnId: turn.turnId, replyId: turn.replyId });
    } catch (err) {
      await chatSettleTurn({ chatId: input.chatId, turnId: turn.turnId, replyId: turn.replyId, error: (err as Error).message });
    }
    reserved = null;
    notes = null;
    turns += 1;
    if (workflowInfo().continueAsNewSuggested) {
      await condition(allHandlersFinished);
      if (reserved === null) await continueAsNew<typeof chat>({ ...input, turns });
    }
  }
}
