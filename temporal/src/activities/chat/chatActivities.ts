import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ChatRecord, ChatStore } from '@keelson/chats';
import type { AgentTurnRequest } from '@keelson/providers';
import type { ApprovalObserver, MessageChunk, RibAgentTurn, ToolCaller } from '@keelson/ribs-contract';
import { chatWorkflowMessages, MeshError } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { asActivity } from '../failures';
import { workflowSteerReader } from '../steerReader';

export interface ChatActivityDeps {
  /** The chat tables (their only writer). */
  store: ChatStore;
  /** Agent turns through the worker's provider registry and rib host; absent, turns fail CAPABILITY_UNSUPPORTED. */
  turns?: {
    run(req: AgentTurnRequest): RibAgentTurn;
    /** Resolves once the worker's rib host is active (its tools and policies). */
    ready(): Promise<unknown>;
  };
  log: Logger;
}

/** The turn request of a chat's message: its agent, its tools on the `chat` surface, the session it resumes. */
function turnRequest(
  chat: ChatRecord,
  text: string,
  turnId: string,
  signal: AbortSignal,
  heartbeat: () => void,
  steer: () => Promise<readonly string[]>,
  onApproval: ApprovalObserver,
): AgentTurnRequest {
  const caller: ToolCaller | undefined = chat.startedBy ? { subject: chat.startedBy.subject, kind: chat.startedBy.kind, scopes: chat.startedBy.scopes, ...(chat.startedBy.tokenId ? { tokenId: chat.startedBy.tokenId } : {}) } : undefined;
  return {
    prompt: text,
    ...(chat.systemPrompt ? { system: chat.systemPrompt } : {}),
    ...(chat.provider ? { provider: chat.provider } : {}),
    ...(chat.model ? { model: chat.model } : {}),
    // A chat without a rib is text-only; a rib's chat gets the rib's own tools.
    ...(chat.tools.length ? { allowedTools: chat.tools } : {}),
    ...(chat.sessionId ? { resumeSessionId: chat.sessionId } : {}),
    ...(chat.ribId ? { ribId: chat.ribId } : {}),
    surface: 'chat',
    turnId,
    turnContext: { chatId: chat.id, turnId },
    onApproval,
    abortSignal: signal,
    onProgress: heartbeat,
    steer,
    ...(caller ? { caller } : {}),
  };
}

/** Records what the turn hears of an ask it waits on: the approval opened (answer it by its id), then answered. */
function approvalRecorder(store: ChatStore, chatId: string, turnId: string): ApprovalObserver {
  return (n) =>
    n.state === 'opened'
      ? store.turnEvent(chatId, turnId, 'CHAT_APPROVAL_OPENED', { approvalId: n.approvalId, text: n.reason, ...(n.tool ? { tool: n.tool } : {}) })
      : store.turnEvent(chatId, turnId, 'CHAT_APPROVAL_ANSWERED', { approvalId: n.approvalId, approved: n.approved, ...(n.tool ? { tool: n.tool } : {}) });
}

/** Records a streamed chunk as the turn's live event (tool calls and results; the text settles with the turn). */
async function recordChunk(store: ChatStore, chatId: string, turnId: string, chunk: MessageChunk): Promise<void> {
  if (chunk.type === 'tool_use') await store.turnEvent(chatId, turnId, 'CHAT_TOOL_CALL', { tool: chunk.name, toolUseId: chunk.toolUseId });
  else if (chunk.type === 'tool_result') await store.turnEvent(chatId, turnId, 'CHAT_TOOL_RESULT', { toolUseId: chunk.toolUseId, text: chunk.content, ...(chunk.isError ? { isError: true } : {}) });
  else if (chunk.type === 'text' && chunk.text) await store.turnEvent(chatId, turnId, 'CHAT_DELTA', { text: chunk.text });
}

/** The activities of the `chat` workflow. */
export function createChatActivities(deps: ChatActivityDeps | undefined) {
  const need = (): ChatActivityDeps => {
    if (!deps) throw ApplicationFailure.nonRetryable('this worker was started without the chat tables (ActivityDeps.chat)', 'SERVICE_UNAVAILABLE');
    return deps;
  };
  return {
    /** Stores the user's message and opens its turn (idempotent by the message id); TURN_IN_FLIGHT while another runs. */
    async chatOpenTurn(input: { chatId: string; turnId: string; messageId: string; text: string }): Promise<void> {
      return asActivity(() => need().store.openTurn(input.chatId, input));
    },

    /**
     * Answers one turn: the chat's agent (system prompt, provider, model) with the rib's tools on the
     * `chat` policy surface (an `ask` waits in the approval inbox), resuming the chat's provider
     * session; tool calls and results become CHAT_TOOL_CALL / CHAT_TOOL_RESULT as they stream, and the
     * answer is stored when the turn settles. Cancelling the workflow aborts the turn.
     */
    async chatTurn(input: { chatId: string; turnId: string; replyId: string }): Promise<{ status: string }> {
      return asActivity(async () => {
        const { store, turns } = need();
        if (!turns) throw new MeshError('CAPABILITY_UNSUPPORTED', 'this worker runs no agent turns (no model provider is configured)');
        const chat = await store.get(input.chatId);
        if (!chat) throw new MeshError('NOT_FOUND', `chat ${input.chatId} does not exist`);
        const message = await store.turnMessage(input.chatId, input.turnId);
        if (!message) throw new MeshError('NOT_FOUND', `turn ${input.turnId} of chat ${input.chatId} has no message`);
        await turns.ready();
        const activity = Context.current();
        const steer = workflowSteerReader(chatWorkflowMessages.steerNotes, input.turnId, (note) => store.turnEvent(chat.id, input.turnId, 'CHAT_STEERED', { text: note }));
        const request = turnRequest(chat, message.text, input.turnId, activity.cancellationSignal, () => activity.heartbeat(), steer, approvalRecorder(store, chat.id, input.turnId));
        const run = turns.run(request);
        for await (const chunk of run.stream) await recordChunk(store, chat.id, input.turnId, chunk);
        const result = await run.result;
        await store.settleTurn(chat.id, input.turnId, {
          status: result.status,
          text: result.text,
          messageId: input.replyId,
          ...(result.error ? { error: result.error } : {}),
          ...(result.sessionId ? { sessionId: result.sessionId } : {}),
        });
        return { status: result.status };
      });
    },

    /** Settles a turn whose activity failed for good, so the chat takes the next message. */
    async chatSettleTurn(input: { chatId: string; turnId: string; replyId: string; error: string }): Promise<void> {
      return asActivity(() => need().store.settleTurn(input.chatId, input.turnId, { status: 'error', text: '', messageId: input.replyId, error: input.error }));
    },
  };
}

export type ChatActivities = ReturnType<typeof createChatActivities>;
