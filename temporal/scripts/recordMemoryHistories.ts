// Records the event histories of the `memoryCompaction` workflow into temporal/histories/, for
// replay.int.test.ts: a pass that writes two summaries and finds one already written, and a pass
// where one range's provider refuses (the pass fails after the others were written). The memory
// subgraph and the provider are stand-ins (the workflow only sees its activities' results).
// Re-record only on purpose: a history is the contract that deployed passes hold us to.
//   node -r ./scripts/register.js temporal/scripts/recordMemoryHistories.ts [--address host:port]
import { ProviderError, ProviderRegistry, type ModelProvider } from '@keelson/providers';
import { workflowKinds, workflowTypes } from '@keelson/schema';
import { connectClient, createActivities, searchAttributeKeys, startWorker } from '../src';
import type { MemoryApi, MemoryCompactionInput } from '../src';
import { recordingTarget, runRecording, writeHistory } from './recording';

const TASK_QUEUE = 'record-memory-histories';
const conversationId = '5b0e6c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b';

/** Ranges from 1: the first is already summarised; `refuse` makes the provider refuse the third. */
function standInApi(): MemoryApi {
  return {
    async candidates(window) {
      return [0, 1, 2].map((k) => ({ conversationId, fromSeq: k * window + 1, toSeq: (k + 1) * window }));
    },
    async range(r) {
      return {
        conversationId,
        sessionKey: 'claude-code:6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b',
        agent: 'claude-code',
        channel: 'claude-code',
        messages: Array.from({ length: r.toSeq - r.fromSeq + 1 }, (_, i) => ({ seq: r.fromSeq + i, role: i % 2 ? 'assistant' : 'user', content: `message ${r.fromSeq + i}`, createdAt: '2025-07-01T10:00:00Z' })),
        existingSummaryId: r.fromSeq === 1 ? '1' : null,
      };
    },
    async saveSummary(input) {
      return { id: String(input.fromSeq), fromSeq: input.fromSeq, toSeq: input.toSeq, model: input.model };
    },
  };
}

const provider = (refuseFrom?: number): ModelProvider => ({
  id: 'anthropic',
  displayName: 'stand-in',
  defaultModel: 'stand-in-model',
  modelClasses: { fast: 'stand-in-fast' },
  capabilities: { streaming: true, tools: false, sessionResume: false, reasoningEffort: false },
  async *call(req) {
    const user = req.messages[0];
    const text = user && user.role === 'user' ? user.text : '';
    if (refuseFrom !== undefined && text.includes(`messages ${refuseFrom}–`)) throw new ProviderError('invalid_request_error: the prompt is too long', 400);
    yield { type: 'text', text: 'Summary.' };
    yield { type: 'end', stopReason: 'end', text: 'Summary.', toolCalls: [], reasoning: [], usage: { inputTokens: 10, outputTokens: 2 }, model: 'stand-in-fast' };
  },
});

async function main(): Promise<void> {
  const { address, stop } = await recordingTarget();
  const client = await connectClient({ address });
  try {
    for (const [name, refuseFrom] of [
      ['memoryCompaction', undefined],
      ['memoryCompaction-failed', 21],
    ] as const) {
      const registry = new ProviderRegistry([provider(refuseFrom)]);
      const worker = await startWorker({ address, taskQueue: TASK_QUEUE, activities: createActivities({ memory: { api: standInApi(), registry: () => registry } }) });
      try {
        const input: MemoryCompactionInput = { window: 10, maxRanges: 20, modelClass: 'fast' };
        const handle = await client.workflow.start(workflowTypes.memoryCompaction, {
          taskQueue: TASK_QUEUE,
          workflowId: `record-${name}-${Date.now()}`,
          args: [input],
          typedSearchAttributes: [
            { key: searchAttributeKeys.kind, value: workflowKinds.compaction },
            { key: searchAttributeKeys.workflowName, value: workflowTypes.memoryCompaction },
          ],
        });
        await handle.result().catch(() => undefined);
        await writeHistory(name, await handle.fetchHistory());
      } finally {
        await worker.stop();
      }
    }
  } finally {
    await client.connection.close();
    await stop();
  }
}

runRecording(main);
