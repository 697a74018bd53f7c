// The chat workflow's Temporal messages, shared by the workflow and its clients (schema/protocol/chats.md).
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import { chatWorkflowMessages, type ChatSendArgs, type ChatSendResult, type ChatSteerArgs } from '@keelson/schema';

/** Update `chatSend`: one user message; rejected TURN_IN_FLIGHT while a turn runs. */
export const chatSendUpdate = defineUpdate<ChatSendResult, [ChatSendArgs]>(chatWorkflowMessages.send);

/** Query `chatStatus` answer. */
export interface ChatLiveStatus {
  chatId: string;
  /** The turn being answered, or null. */
  turnInFlight: string | null;
  /** Turns answered (across continue-as-new). */
  turns: number;
}

/** Query `chatStatus`. */
export const chatStatusQuery = defineQuery<ChatLiveStatus>(chatWorkflowMessages.status);

/** Update `chatSteer`: a note for the turn in flight, read between its tool rounds; refused when none runs. */
export const chatSteerUpdate = defineUpdate<{ turnId: string }, [ChatSteerArgs]>(chatWorkflowMessages.steer);

/** Query `chatSteerNotes`: the notes a turn was sent, in order (empty for another turn). */
export const chatSteerNotesQuery = defineQuery<string[], [string]>(chatWorkflowMessages.steerNotes);
