import { bundleWorkflowCode, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { workflowTracingModule } from './tracing';

/** The module every workflow is exported from; the worker and the replay tests load exactly this. */
export const workflowsPath = require.resolve('./workflows');

const cached = new Map<boolean, Promise<WorkflowBundleWithSourceMap>>();

/**
 * The webpack bundle of {@link workflowsPath}, built once per process (about a second) and shared by
 * every worker and replay in it. `traced` adds the OpenTelemetry workflow interceptors (spans of the
 * workflow and of each activity it schedules), for workers that register the span sink.
 */
export function workflowBundle(options: { traced?: boolean } = {}): Promise<WorkflowBundleWithSourceMap> {
  const traced = options.traced ?? false;
  let bundle = cached.get(traced);
  if (!bundle) {
    bundle = bundleWorkflowCode({
      workflowsPath,
      ...(traced ? { workflowInterceptorModules: [workflowTracingModule] } : {}),
      logger: new DefaultLogger('WARN'),
    }).catch((error: unknown) => {
      cached.delete(traced);
      throw error;
    });
    cached.set(traced, bundle);
  }
  return bundle;
}
