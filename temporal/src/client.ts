import { randomUUID } from 'node:crypto';
import { Client, Connection, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { TASK_QUEUE, workflowTypes } from '@keelson/schema';
import { searchAttributeKeys } from './searchAttributeKeys';
import { clientTracingInterceptors } from './tracing';
import type { echoWorkflow } from './workflows';

export interface ConnectClientOptions {
  /** `host:port` of the Temporal frontend. */
  address: string;
  /** @default default */
  namespace?: string;
}

/**
 * A workflow client on its own connection; close it with `client.connection.close()`. Its calls
 * carry the caller's trace context to the workflow (OpenTelemetry; inert while tracing is off).
 */
export async function connectClient({ address, namespace = 'default' }: ConnectClientOptions): Promise<Client> {
  const connection = await Connection.connect({ address });
  return new Client({ connection, namespace, interceptors: { workflow: clientTracingInterceptors() } });
}

/**
 * The Web UI page of a workflow: its latest run, or the given run's history.
 * @example workflowUiUrl('http://127.0.0.1:8233', 'default', 'echo-1') // http://127.0.0.1:8233/namespaces/default/workflows/echo-1
 */
export function workflowUiUrl(uiBase: string, namespace: string, workflowId: string, runId?: string): string {
  const base = `${uiBase.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
  return runId ? `${base}/${encodeURIComponent(runId)}/history` : base;
}

export interface StartEchoOptions {
  /** @default TASK_QUEUE from @keelson/schema */
  taskQueue?: string;
  /** Shown in the UI's memo. @default `Echo proof: <message>` */
  title?: string;
  /** @default `echo-<uuid>` */
  workflowId?: string;
}

/** Starts the proof workflow, marked `KeelsonKind = 'proof'` so it can be listed apart from real work. */
export function startEcho(
  client: Client,
  message: string,
  options: StartEchoOptions = {},
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof echoWorkflow>> {
  return client.workflow.start<typeof echoWorkflow>(workflowTypes.echo, {
    taskQueue: options.taskQueue ?? TASK_QUEUE,
    workflowId: options.workflowId ?? `echo-${randomUUID()}`,
    args: [{ message }],
    typedSearchAttributes: [{ key: searchAttributeKeys.kind, value: 'proof' }],
    memo: { title: options.title ?? `Echo proof: ${message}` },
  });
}
