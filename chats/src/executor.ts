import type { ChatSendArgs, ChatSendResult, ChatSteerArgs, ErrorCode } from '@keelson/schema';

/** A chat's workflow (`chat`), started by the first message that finds it not running. */
export interface ChatLaunchRequest {
  workflowId: string;
  chatId: string;
  /** Shown as the memo title. */
  title: string;
  /** The rib whose agent or tools it uses (searchable). */
  rib: string | null;
}

/** A message sent to a chat's workflow. */
export type ChatSendOutcome =
  | ({ outcome: 'accepted' } & ChatSendResult)
  /** The workflow refused it (TURN_IN_FLIGHT while a turn runs) or failed it. */
  | { outcome: 'failed'; code: ErrorCode; message: string };

/** A steer note sent to a chat's workflow. */
export type ChatSteerOutcome =
  | { outcome: 'accepted'; turnId: string }
  | { outcome: 'not-running' }
  /** The workflow refused it (CONFLICT: no turn runs) or failed it. */
  | { outcome: 'failed'; code: ErrorCode; message: string };

/**
 * What the chats domain asks of the executor that runs its conversations. `@keelson/temporal`
 * implements it (`temporalChatsExecutor`); the chats domain never imports the executor.
 */
export interface ChatsExecutor {
  /** The workflow id of a chat: what operators see and search. */
  chatWorkflowId(chatId: string): string;
  /** The workflow's page in the executor's UI, when that is known. */
  uiUrl(workflowId: string): string | null;
  /**
   * One user message, starting the chat's workflow when it does not run (an idle chat's ended); the
   * same `key` is one message however often sent. Rejects when the executor cannot be reached.
   */
  send(chat: ChatLaunchRequest, args: ChatSendArgs, key: string | null): Promise<ChatSendOutcome>;
  /** A note for the turn in flight (read between its tool rounds); the same `key` is one note. */
  steer(workflowId: string, args: ChatSteerArgs, key: string | null): Promise<ChatSteerOutcome>;
}
