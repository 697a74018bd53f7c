// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The swarm workflow's activities, each family with its own timeouts and retries, and what the
// workflow's steps share.
import { ActivityCancellationType, proxyActivities, type CancellationScope } from '@temporalio/workflow';
import { WORKSPACE_ACQUIRE_TIMEOUT_MS } from '@keelson/schema';
import type { OpActivities } from '../activities/ops/opActivities';
import type { SwarmActivities } from '../activities/swarm/swarmActivities';
import type { SwarmRun } from './swarmRun';
import type { SwarmWorkflowInput } from './swarmState';

/** The swarm's activity proxies (creating them issues no command). */
export function swarmProxies(input: SwarmWorkflowInput) {
  const { limits } = input;
  const book = proxyActivities<OpActivities>({
    startToCloseTimeout: '1 minute',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT'] },
  });
  const acts = proxyActivities<SwarmActivities>({
    startToCloseTimeout: '2 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 30, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'] },
  });
  // A writer's lease prepares its worktree's dependencies (npm ci, …) before it answers: as long as the
  // whole acquire may take (WORKSPACE_ACQUIRE_TIMEOUT_MS, as a worktree run's launch) and not repeated
  // when the preparation itself failed (UPSTREAM_FAILED: the lease was refused, nothing kept).
  const leaseActs = proxyActivities<SwarmActivities>({
    startToCloseTimeout: WORKSPACE_ACQUIRE_TIMEOUT_MS + 60_000,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED', 'UPSTREAM_FAILED'] },
  });
  // Publishing runs once: a retry after the draft command succeeded would open a second request.
  const publishActs = proxyActivities<SwarmActivities>({ startToCloseTimeout: '15 minutes', retry: { maximumAttempts: 1 } });
  const tailActs = proxyActivities<SwarmActivities>({
    startToCloseTimeout: '7 days',
    heartbeatTimeout: input.heartbeatTimeoutMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '10 seconds', nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT'] },
  });
  const turnActs = proxyActivities<SwarmActivities>({
    startToCloseTimeout: limits.turnTimeoutS * 1000 + 120_000,
    heartbeatTimeout: input.heartbeatTimeoutMs,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 6, nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'] },
  });
  return { book, acts, leaseActs, publishActs, tailActs, turnActs };
}

/** What the swarm workflow's steps share: its state, its activities, and its turns in flight. */
export interface SwarmCtx {
  run: SwarmRun;
  proxies: ReturnType<typeof swarmProxies>;
  /** The scope every turn runs in: the end cancels the turns still running. */
  turnScope: CancellationScope;
  /** Every turn started by this execution, settled into `run.finished`. */
  turnsInFlight: Promise<void>[];
}
