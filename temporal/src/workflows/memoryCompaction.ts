// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { ApplicationFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { MemoryActivities, SummaryModelChoice } from '../activities/memory/memoryActivities';

export interface MemoryCompactionInput extends SummaryModelChoice {
  /** Messages per summary: each full window `k·window+1 .. (k+1)·window` is summarised once. @default 50 */
  window?: number;
  /** Ranges one pass summarises at most (the next pass takes the rest). @default 20 */
  maxRanges?: number;
}

export interface MemoryCompactionResult {
  /** Ranges this pass looked at. */
  ranges: number;
  /** Summaries the model wrote in this pass. */
  written: number;
  /** Ranges a summary already covered (a retried or concurrent pass wrote it). */
  existing: number;
}

/** Codes no retry of an activity can fix. */
const PERMANENT = ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED', 'FORBIDDEN', 'UNAUTHENTICATED'];

/** Summaries written at once (each is one model call). */
const CONCURRENCY = 2;

/**
 * One memory compaction pass (`workflowTypes.memoryCompaction`, started by the Schedule
 * `memory-compaction-<task queue>`, `KeelsonKind=compaction`): asks memory for the full windows of
 * long conversations that no summary covers, then summarises each through the provider registry,
 * two at a time. Idempotent per range end to end — windows are fixed and `saveSummary` keeps one
 * summary per range — so overlapping, retried or replayed passes store each summary once. A range
 * that keeps failing fails the pass after the others were tried; it stays a candidate for the next.
 */
export async function memoryCompaction(input: MemoryCompactionInput = {}): Promise<MemoryCompactionResult> {
  const { memoryCompactionCandidates } = proxyActivities<MemoryActivities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1 second', maximumAttempts: 5, nonRetryableErrorTypes: PERMANENT },
  });
  const { memorySummarizeRange } = proxyActivities<MemoryActivities>({
    startToCloseTimeout: '10 minutes',
    heartbeatTimeout: '1 minute',
    retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '1 minute', maximumAttempts: 4, nonRetryableErrorTypes: PERMANENT },
  });

  const choice: SummaryModelChoice = {
    ...(input.provider ? { provider: input.provider } : {}),
    ...(input.model ? { model: input.model } : {}),
    ...(input.modelClass ? { modelClass: input.modelClass } : {}),
    ...(input.maxTokens ? { maxTokens: input.maxTokens } : {}),
  };
  const ranges = await memoryCompactionCandidates({ window: input.window ?? 50, limit: input.maxRanges ?? 20 });
  const result: MemoryCompactionResult = { ranges: ranges.length, written: 0, existing: 0 };
  const failed: string[] = [];
  for (let i = 0; i < ranges.length; i += CONCURRENCY) {
    await Promise.all(
      ranges.slice(i, i + CONCURRENCY).map(async (range) => {
        try {
          const r = await memorySummarizeRange({ ...range, ...choice });
          if (r.outcome === 'written') result.written += 1;
          else if (r.outcome === 'existing') result.existing += 1;
        } catch (err) {
          if (isCancellation(err)) throw err;
          failed.push(`${range.conversationId} ${range.fromSeq}..${range.toSeq}: ${err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err)}`);
        }
      }),
    );
  }
  if (failed.length) {
    throw ApplicationFailure.create({
      type: 'UPSTREAM_FAILED',
      message: `${failed.length} of ${ranges.length} summaries failed (${result.written} written, ${result.existing} already there): ${failed.join('; ')}`,
      nonRetryable: true,
    });
  }
  return result;
}
