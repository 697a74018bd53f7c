// Records the event history of the `chat` workflow into temporal/histories/chat.json, for
// replay.int.test.ts: a chat started by its first message (update-with-start, as the chats executor
// sends it), steered while that turn runs, a second message whose turn fails for good (settled by
// chatSettleTurn), then its idle end. The activities are stand-ins: the workflow only sees their
// results and failures.
// Re-record only on purpose: a history is the contract that deployed chats hold us to.
//   node -r ./scripts/register.js temporal/scripts/recordChatHistories.ts [--address host:port]
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { chatWorkflowId, connectClient, createActivities, startWorker, temporalChatsExecutor } from '../src';
import { chatStatusQuery } from '../src/workflows/chatMessages';
import { recordingTarget, runRecording, writeHistory } from './recording';

const TASK_QUEUE = 'record-chat-histories';
const chatId = '7d1e2f3a-4b5c-4d6e-8f70-81a2b3c4d5e6';

/** A turn the script holds open until it has steered it; the second turn fails for good. */
function standInTurns() {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  let turns = 0;
  return {
    release,
    running,
    activities: {
      async chatOpenTurn(): Promise<void> {},
      async chatTurn(): Promise<{ status: string }> {
        turns += 1;
        if (turns > 1) throw ApplicationFailure.nonRetryable('this worker runs no agent turns (no model provider is configured)', 'CAPABILITY_UNSUPPORTED');
        started();
        await held;
        return { status: 'ok' };
      },
      async chatSettleTurn(): Promise<void> {},
    },
  };
}

/** Waits until the chat has answered `turns` turns and holds none. */
async function answered(client: Client, turns: number): Promise<void> {
  const handle = client.workflow.getHandle(chatWorkflowId(chatId));
  for (let i = 0; i < 200; i++) {
    const status = await handle.query(chatStatusQuery);
    if (status.turns >= turns && status.turnInFlight === null) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the chat did not answer ${turns} turns`);
}

runRecording(async () => {
  const target = await recordingTarget();
  const client = await connectClient({ address: target.address });
  const turns = standInTurns();
  const worker = await startWorker({ address: target.address, taskQueue: TASK_QUEUE, activities: { ...createActivities(), ...turns.activities } });
  try {
    const executor = temporalChatsExecutor(async () => client, { namespace: 'default', taskQueue: TASK_QUEUE }, { heartbeatTimeoutMs: 10_000, idleMs: 1_000 });
    const launch = { workflowId: chatWorkflowId(chatId), chatId, title: 'Clerk', rib: 'desk' };
    const first = await executor.send(launch, { text: 'file invoice 7', actor: 'user:recorder' }, null);
    if (first.outcome !== 'accepted') throw new Error(`the first message was not taken: ${JSON.stringify(first)}`);
    await turns.running;
    const steered = await executor.steer(launch.workflowId, { note: 'label it invoice-7', actor: 'user:recorder' }, null);
    if (steered.outcome !== 'accepted') throw new Error(`the steer was not taken: ${JSON.stringify(steered)}`);
    turns.release();
    await answered(client, 1);
    const second = await executor.send(launch, { text: 'and shred draft 3', actor: 'user:recorder' }, null);
    if (second.outcome !== 'accepted') throw new Error(`the second message was not taken: ${JSON.stringify(second)}`);
    const handle = client.workflow.getHandle(launch.workflowId);
    await handle.result();
    await writeHistory('chat', await handle.fetchHistory());
  } finally {
    await worker.stop();
    await target.stop();
  }
});
