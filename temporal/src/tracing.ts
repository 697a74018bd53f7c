import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { InjectedSinks, WorkerInterceptors } from '@temporalio/worker';
import { serviceTracer, spanProcessorFor, tracingActive } from '@keelson/service';

/** The mesh service the worker's spans (workflows and activities) belong to. */
export const WORKER_SERVICE = 'worker';

/** The workflow-side interceptors' module, bundled only while tracing is on. */
export const workflowTracingModule = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/**
 * The client interceptor starting a span for each workflow start, signal, update or query and
 * passing its context to the workflow in Temporal headers. Its spans belong to the mesh service
 * calling (the runs subgraph for `startWorkflow`); with tracing off they record nothing.
 */
export function clientTracingInterceptors(): WorkflowClientInterceptor[] {
  return [new OpenTelemetryWorkflowClientInterceptor()];
}

/**
 * With tracing on: activity spans (children of the workflow's schedule span, so of the client call
 * that started it) and the sink the sandboxed workflows export their spans through. Nothing otherwise.
 */
export function workerTracing(): { interceptors?: WorkerInterceptors; sinks?: InjectedSinks<Record<string, never>> } {
  const exporting = spanProcessorFor(WORKER_SERVICE);
  if (!tracingActive() || !exporting) return {};
  const tracer = serviceTracer(WORKER_SERVICE, '@temporalio/interceptors-opentelemetry');
  return {
    interceptors: {
      activity: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
    },
    sinks: { exporter: makeWorkflowExporter(exporting.processor, exporting.resource) } as unknown as InjectedSinks<Record<string, never>>,
  };
}
