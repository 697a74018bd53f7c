import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ProviderError, type ProviderRegistry } from '@keelson/providers';
import { MeshError } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { asActivity } from '../failures';
import type { MemoryApi, CompactionRange } from './memoryApi';
import { summaryPrompt } from './summaryPrompt';

export interface MemoryActivityDeps {
  /** The memory subgraph (candidates, ranges, summaries). */
  api: MemoryApi;
  /** The provider registry summaries are written through; called once per summary (build it lazily). */
  registry: () => ProviderRegistry;
  log?: Logger;
}

/** How a summary is written: the provider (a hint, else the default), the model or its class. */
export interface SummaryModelChoice {
  provider?: string;
  model?: string;
  /** @default fast */
  modelClass?: 'fast' | 'balanced' | 'deep';
  /** Output cap of the summary call. @default 1024 */
  maxTokens?: number;
}

export interface SummarizeRangeResult {
  summaryId: string | null;
  /** written: the model wrote it now; existing: a summary of the range was already stored (no model call); gone: the conversation no longer exists. */
  outcome: 'written' | 'existing' | 'gone';
  model?: string;
}

/** Statuses a retry cannot fix: the request itself is wrong or not allowed. */
const PERMANENT_STATUSES = new Set([400, 401, 403, 404, 422]);

/** The activities of the `memoryCompaction` workflow. */
export function createMemoryActivities(deps: MemoryActivityDeps | undefined) {
  const need = (): MemoryActivityDeps => {
    if (!deps) throw ApplicationFailure.nonRetryable('this worker was started without memory access (ActivityDeps.memory)', 'SERVICE_UNAVAILABLE');
    return deps;
  };
  return {
    /** The next full windows no summary covers (see the memory subgraph's `compactionCandidates`). */
    async memoryCompactionCandidates(input: { window: number; limit: number }): Promise<CompactionRange[]> {
      return asActivity(() => need().api.candidates(input.window, input.limit));
    },

    /**
     * Writes the summary of one range once: a range already summarised costs no model call; otherwise
     * its messages go to the provider (heartbeating while it streams) and the text is stored with
     * `saveSummary`, idempotent per range, so a retry after a lost answer stores nothing new.
     */
    async memorySummarizeRange(input: CompactionRange & SummaryModelChoice): Promise<SummarizeRangeResult> {
      return asActivity(async () => {
        const { api, registry } = need();
        const ctx = Context.current();
        const range = { conversationId: input.conversationId, fromSeq: input.fromSeq, toSeq: input.toSeq };
        const content = await api.range(range);
        if (!content) return { summaryId: null, outcome: 'gone' };
        if (content.existingSummaryId) return { summaryId: content.existingSummaryId, outcome: 'existing' };
        const expected = range.toSeq - range.fromSeq + 1;
        if (content.messages.length !== expected) {
          throw new MeshError('CONFLICT', `conversation ${range.conversationId} holds ${content.messages.length} of the ${expected} messages ${range.fromSeq}..${range.toSeq}`);
        }
        const providers = registry();
        const provider = providers.pick(input.provider);
        if (!provider) {
          throw new MeshError(
            'CAPABILITY_UNSUPPORTED',
            'no model provider is registered on this worker to write summaries (set ANTHROPIC_API_KEY, OPENAI_API_KEY, a KEELSON_*_BASE_URL or the config file\'s providers)',
          );
        }
        const model = input.model ?? providers.resolveModel(provider, { modelClass: input.modelClass ?? 'fast' });
        const { system, user } = summaryPrompt(content, range);
        let text = '';
        let reported: string | undefined;
        const beat = setInterval(() => ctx.heartbeat(), 5_000);
        try {
          for await (const event of provider.call({ model, system, messages: [{ role: 'user', text: user }], tools: [], maxTokens: input.maxTokens ?? 1024, signal: ctx.cancellationSignal })) {
            ctx.heartbeat();
            if (event.type === 'end') {
              text = event.text;
              reported = event.model;
            }
          }
        } catch (err) {
          if (err instanceof ProviderError) {
            throw ApplicationFailure.create({ message: `${provider.id} could not write the summary: ${err.message}`, type: 'UPSTREAM_FAILED', nonRetryable: PERMANENT_STATUSES.has(err.status ?? 0) });
          }
          throw err;
        } finally {
          clearInterval(beat);
        }
        const summary = text.trim();
        if (!summary) throw ApplicationFailure.retryable(`${provider.id} (${model}) answered an empty summary`, 'UPSTREAM_FAILED');
        const saved = await api.saveSummary({ ...range, content: summary.slice(0, 200_000), model: reported ?? model });
        return { summaryId: saved.id, outcome: 'written', model: saved.model ?? undefined };
      });
    },
  };
}

export type MemoryActivities = ReturnType<typeof createMemoryActivities>;
