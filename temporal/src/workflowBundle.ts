import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';

/** The module every workflow is exported from; the worker and the replay tests load exactly this. */
export const workflowsPath = require.resolve('./workflows');

let cached: Promise<WorkflowBundleWithSourceMap> | undefined;

/**
 * The webpack bundle of {@link workflowsPath}, built once per process (about a second) and shared by
 * every worker and replay in it.
 */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  cached ??= bundleWorkflowCode({ workflowsPath, logger: new DefaultLogger('WARN') }).catch((error: unknown) => {
    cached = undefined;
    throw error;
  });
  return cached;
}
