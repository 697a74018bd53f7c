// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import { proxyActivities } from '@temporalio/workflow';
import type { RunActivities } from '../activities/runs/runActivities';

/** Bookkeeping activities of a run: short, retried until the database answers. */
export const book = proxyActivities<RunActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'] },
});
