import { ApplicationFailure } from '@temporalio/common';
import { createSandbox, type ProcessSandbox } from '@keelson/platform';
import { MeshError, type WorkflowNode } from '@keelson/schema';
import type { RunRecord } from '@keelson/runs';
import type { RunActivityDeps } from './runActivities';

/** What every run activity shares: the deps (or a SERVICE_UNAVAILABLE failure), the run loader, the sandbox. */
export function runActivityContext(deps: RunActivityDeps | undefined) {
  let defaultSandbox: ProcessSandbox | undefined;
  const sandboxOf = (d: RunActivityDeps): ProcessSandbox => d.sandbox ?? (defaultSandbox ??= createSandbox());
  const need = (): RunActivityDeps => {
    if (!deps) throw ApplicationFailure.nonRetryable('this worker was started without a runs store (ActivityDeps.runs)', 'SERVICE_UNAVAILABLE');
    return deps;
  };
  const loadRun = async (runId: string): Promise<RunRecord> => {
    const run = await need().store.getRun(runId);
    if (!run) throw new MeshError('NOT_FOUND', `run ${JSON.stringify(runId)} does not exist`);
    return run;
  };
  return { deps, need, loadRun, sandboxOf };
}

export type RunActivityContext = ReturnType<typeof runActivityContext>;

/** The node `nodeId` of the run's definition; NOT_FOUND when it has none. */
export function runNodeOf(run: RunRecord, nodeId: string): WorkflowNode {
  const node = run.definition.nodes.find((n) => n.id === nodeId);
  if (!node) throw new MeshError('NOT_FOUND', `run ${run.id} (${run.workflowName}) has no node ${JSON.stringify(nodeId)}`);
  return node;
}
