import type { ChatsExecutor } from '@keelson/chats';
import { workflowKinds, workflowTypes, type TemporalTarget } from '@keelson/schema';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { workflowUiUrl } from './client';
import { sendUpdate } from './executorCalls';
import { keelsonSearchAttributes } from './searchAttributeKeys';
import type { chat } from './workflows';
import { chatSendUpdate, chatSteerUpdate } from './workflows/chatMessages';

/** `chat-<chat id>`: the chat's workflow, findable by id in the Temporal UI. */
export function chatWorkflowId(chatId: string): string {
  return `chat-${chatId}`;
}

export interface ChatsExecutorTuning {
  /** Heartbeat timeout of a chat's turns. */
  heartbeatTimeoutMs: number;
  /** How long an idle chat keeps its workflow. @default 600000 */
  idleMs?: number;
}

/**
 * The chats domain's executor over a Temporal client: one `chat` workflow per chat (`KeelsonKind=chat`,
 * `KeelsonRib`), started by update-with-start with the first message that finds it not running, so an
 * idle chat needs no open workflow. `client` is awaited per call, so a service may start before Temporal.
 */
export function temporalChatsExecutor(client: () => Promise<Client>, target: Omit<TemporalTarget, 'address'>, tuning: ChatsExecutorTuning): ChatsExecutor {
  return {
    chatWorkflowId,
    uiUrl: (workflowId) => (target.uiUrl ? workflowUiUrl(target.uiUrl, target.namespace, workflowId) : null),

    async send(req, args, key) {
      const temporal = await client();
      const start = new WithStartWorkflowOperation<typeof chat>(workflowTypes.chat, {
        workflowId: req.workflowId,
        taskQueue: target.taskQueue,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [{ chatId: req.chatId, heartbeatTimeoutMs: tuning.heartbeatTimeoutMs, idleMs: tuning.idleMs ?? 600_000 }],
        typedSearchAttributes: keelsonSearchAttributes({ kind: workflowKinds.chat, workflowName: workflowTypes.chat, rib: req.rib ?? undefined }),
        memo: { title: req.title, chatId: req.chatId },
        staticSummary: `chat: ${req.title.slice(0, 180)} · ${req.chatId.slice(0, 8)}`,
      });
      // The same key is the same Update id: a repeated send answers the first's turn.
      const sent = await sendUpdate(key, async (updateId) => {
        const r = await temporal.workflow.executeUpdateWithStart(chatSendUpdate, { args: [args], updateId, startWorkflowOperation: start });
        return { outcome: 'accepted' as const, turnId: r.turnId, messageId: r.messageId };
      });
      // Update-with-start starts a chat that does not run, so only a race with its end lands here.
      return sent.outcome === 'not-running' ? { outcome: 'failed', code: 'CONFLICT', message: `chat ${req.chatId} ended while the message was sent; send it again` } : sent;
    },

    async steer(workflowId, args, key) {
      const handle = (await client()).workflow.getHandle(workflowId);
      return sendUpdate(key, async (updateId) => ({ outcome: 'accepted' as const, ...(await handle.executeUpdate(chatSteerUpdate, { args: [args], updateId })) }));
    },
  };
}
