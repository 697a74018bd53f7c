// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// Node execution of a run: which nodes start, each in its own cancellation scope, and how it settles.
import { ActivityCancellationType, ApplicationFailure, CancellationScope, isCancellation, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { PlanNode } from '@keelson/schema';
import type { RunActivities } from '../activities/runs/runActivities';
import { book } from './dagBook';
import { runApproval } from './dagGates';
import { nextStep } from './dagGraph';
import type { DagLaunch } from './dagState';

/** How many times a node's activity is retried beyond its own `retries` when its worker is lost. */
const LOST_WORKER_RETRIES = 3;

function nodeActivities(node: PlanNode, heartbeatTimeoutMs: number) {
  return proxyActivities<RunActivities>({
    // What the Temporal UI shows for the activity: the node and its kind (`lint: bash`).
    summary: `${node.id}: ${node.type}`,
    // The node's own timeout is enforced by the activity (it kills the command); this is the backstop.
    startToCloseTimeout: node.timeoutMs + 60_000,
    heartbeatTimeout: heartbeatTimeoutMs,
    // The run reports CANCELLED only after the command's process group was killed.
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '1 second',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      maximumAttempts: node.retries + 1 + LOST_WORKER_RETRIES,
      nonRetryableErrorTypes: ['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED'],
    },
  });
}

/** A one-line reason and an error type for a failed node. */
export function describeFailure(err: unknown): { message: string; type: string } {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  if (cause instanceof TimeoutFailure) {
    return { message: `its worker was lost (${cause.timeoutType === 'HEARTBEAT' ? 'no heartbeat' : 'timed out'}) and retries ran out`, type: 'UPSTREAM_FAILED' };
  }
  if (cause instanceof ApplicationFailure) return { message: cause.message, type: cause.type ?? 'UPSTREAM_FAILED' };
  return { message: cause instanceof Error ? cause.message : String(err), type: 'UPSTREAM_FAILED' };
}

/** Runs one node: an approval's gate, a cancel node's stop, or a command or prompt activity. */
async function runNode(run: DagLaunch, node: PlanNode, heartbeatTimeoutMs: number): Promise<void> {
  const { runId, launch } = run;
  if (node.type === 'approval') return runApproval(run, node);
  if (node.type === 'cancel') {
    const { reason } = await book.stopAtCancelNode({ runId, nodeId: node.id, launch });
    run.stopped = { nodeId: node.id, reason };
    run.setNode(node.id, { status: 'SUCCEEDED', value: reason });
    return;
  }
  run.setNode(node.id, { status: 'RUNNING' });
  const acts = nodeActivities(node, heartbeatTimeoutMs);
  const outcome = node.type === 'prompt' ? await acts.runPromptNode({ runId, nodeId: node.id, launch }) : await acts.runCommandNode({ runId, nodeId: node.id, launch });
  run.setNode(node.id, { status: 'SUCCEEDED', value: outcome.value });
}

/** Runs a node's task in its own cancellation scope; it settles the node whatever happens. */
export function launchTask(run: DagLaunch, node: PlanNode, kind: 'work' | 'gate', body: () => Promise<void>): void {
  const { runId, launch } = run;
  const scope = new CancellationScope();
  run.running.set(node.id, { scope, kind });
  void scope
    .run(body)
    .catch(async (err: unknown) => {
      if (isCancellation(err) || scope.consideredCancelled) {
        await CancellationScope.nonCancellable(() => book.settleNode({ runId, nodeId: node.id, launch, status: 'CANCELLED', error: 'cancelled' }));
        run.setNode(node.id, { status: 'CANCELLED' });
        return;
      }
      const { message, type } = describeFailure(err);
      await CancellationScope.nonCancellable(() => book.settleNode({ runId, nodeId: node.id, launch, status: 'FAILED', error: message }));
      run.setNode(node.id, { status: 'FAILED' });
      run.fail(node.id, message, type);
    })
    .catch((err: unknown) => run.fail(node.id, `settling the node failed: ${describeFailure(err).message}`, 'INTERNAL'))
    .finally(() => run.settle(node.id));
}

/** Starts every node whose turn has come (skipping those that will not run); a cancel node stops the rest. */
export function startReadyNodes(run: DagLaunch, heartbeatTimeoutMs: number): void {
  const { runId, launch } = run;
  for (const node of run.plan) {
    if (run.running.has(node.id)) continue;
    const step = nextStep(node, run.nodes);
    if (step.kind === 'wait') continue;
    if (step.kind === 'skip') {
      launchTask(run, node, 'work', async () => {
        await book.settleNode({ runId, nodeId: node.id, launch, status: 'SKIPPED', error: step.reason });
        run.setNode(node.id, { status: 'SKIPPED', value: '' });
      });
      continue;
    }
    if (step.kind === 'stop') {
      run.stopAt(node.id);
      launchTask(run, node, 'work', () => runNode(run, node, heartbeatTimeoutMs));
      return;
    }
    launchTask(run, node, step.task, () => runNode(run, node, heartbeatTimeoutMs));
  }
}
