// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { proxyActivities } from '@temporalio/workflow';
import { WORKSPACE_ACQUIRE_TIMEOUT_MS } from '@keelson/schema';
import type { RunActivities } from '../activities/runs/runActivities';

const retry = { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'] } as const;

/** Bookkeeping activities of a run: short, retried until the database answers. */
export const book = proxyActivities<RunActivities>({
  startToCloseTimeout: '1 minute',
  retry: { ...retry, nonRetryableErrorTypes: [...retry.nonRetryableErrorTypes] },
});

/**
 * `beginLaunch` of a run: it may lease a worktree, whose acquire fetches origin and prepares
 * dependencies (up to KEELSON_WORKSPACE_PREPARE_TIMEOUT_MS), so it is bounded by the acquire's own
 * bound plus a minute of bookkeeping rather than the book's minute.
 */
export const launchBook = proxyActivities<Pick<RunActivities, 'beginLaunch'>>({
  startToCloseTimeout: WORKSPACE_ACQUIRE_TIMEOUT_MS + 60_000,
  retry: { ...retry, nonRetryableErrorTypes: [...retry.nonRetryableErrorTypes] },
});
