import type { Client, Workflow, WorkflowHandleWithFirstExecutionRunId, WorkflowStartOptions } from '@temporalio/client';
import { workflowKinds, workflowTypes } from '@keelson/schema';
import { keelsonSearchAttributes } from './searchAttributeKeys';
import type { dagRun, DagRunInput, durableOp, DurableOpInput } from './workflows';

/** `run-<name>-<first 8 hex of the run id>`: what operators see and search in the Temporal UI. */
export function runWorkflowId(workflowName: string, runId: string): string {
  return `run-${workflowName}-${runId.replace(/-/g, '').slice(0, 8)}`;
}

/** `op-<kind>-<first 8 hex of the op id>`. */
export function opWorkflowId(kind: string, opId: string): string {
  const safe = kind.replace(/[^A-Za-z0-9._-]+/g, '-').slice(0, 64);
  return `op-${safe}-${opId.replace(/-/g, '').slice(0, 8)}`;
}

export interface StartRunOptions {
  taskQueue: string;
  workflowId: string;
  input: DagRunInput;
  workflowName: string;
  /** Memo title shown in the UI. */
  title: string;
  /** KeelsonProject: the project's name. */
  project?: string | null;
  /** KeelsonRib: the rib that started the run, else the rib whose workflow it is. */
  rib?: string | null;
  /** Who started it, shown in the run's details. */
  startedBy?: string | null;
}

/** The one line the Temporal UI lists a run under: its workflow, its project, its mesh id. */
export function runSummary(opts: Pick<StartRunOptions, 'workflowName' | 'project' | 'input'>): string {
  return `${opts.workflowName}${opts.project ? ` in ${opts.project}` : ''} · run ${opts.input.runId.slice(0, 8)}${opts.input.launch > 1 ? ` (launch ${opts.input.launch})` : ''}`;
}

/** What the run's page says about it (markdown): ids, who, and where to look from the mesh's side. */
export function runDetails(opts: Pick<StartRunOptions, 'workflowName' | 'project' | 'rib' | 'startedBy' | 'title' | 'input'>): string {
  const { runId, launch } = opts.input;
  return [
    `**${opts.title}**`,
    '',
    `- workflow: \`${opts.workflowName}\``,
    `- run: \`${runId}\` (launch ${launch})`,
    ...(opts.project ? [`- project: ${opts.project}`] : []),
    ...(opts.rib ? [`- rib: ${opts.rib}`] : []),
    ...(opts.startedBy ? [`- started by: ${opts.startedBy}`] : []),
    '',
    `GraphQL: \`{ run(id: "${runId}") { status nodes { id status error } pendingApproval { nodeId prompt pauseId } } }\``,
  ].join('\n');
}

/**
 * Starts one launch of a run as `dagRun`, findable by `KeelsonKind='run'`, `KeelsonWorkflowName`,
 * `KeelsonProject` and `KeelsonRib`, with the title in its memo. A resumed run reuses its workflow id
 * (the previous execution is closed).
 */
export function startRunWorkflow(client: Client, opts: StartRunOptions): Promise<WorkflowHandleWithFirstExecutionRunId<typeof dagRun>> {
  return client.workflow.start<typeof dagRun>(workflowTypes.dagRun, {
    taskQueue: opts.taskQueue,
    workflowId: opts.workflowId,
    args: [opts.input],
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
    typedSearchAttributes: keelsonSearchAttributes({ kind: workflowKinds.run, workflowName: opts.workflowName, project: opts.project, rib: opts.rib }),
    memo: {
      title: opts.title,
      runId: opts.input.runId,
      launch: opts.input.launch,
      workflowName: opts.workflowName,
      ...(opts.project ? { project: opts.project } : {}),
      ...(opts.startedBy ? { startedBy: opts.startedBy } : {}),
    },
    staticSummary: runSummary(opts),
    staticDetails: runDetails(opts),
  });
}

/** What starting an op takes, whichever workflow runs it (`durableOp`, or `ribOp` for a rib's op). */
export interface OpStartOptions<I extends { kind: string; opId: string }> {
  /** The mesh's task queue. */
  taskQueue: string;
  workflowId: string;
  input: I;
  /** Memo title shown in the UI. */
  title: string;
  /** KeelsonProject: the project's name. */
  project?: string | null;
  /** KeelsonRib: the rib the op belongs to. */
  rib?: string | null;
}

export type StartOpOptions = OpStartOptions<DurableOpInput>;

/** Starts an op as `workflowType`: `KeelsonKind='op'`, `KeelsonWorkflowName=<kind>`, `KeelsonProject`, `KeelsonRib`, memo `{ title, opId }`. */
export function startOpExecution<W extends Workflow>(
  client: Client,
  workflowType: string,
  opts: OpStartOptions<{ kind: string; opId: string }>,
): Promise<WorkflowHandleWithFirstExecutionRunId<W>> {
  const { input } = opts;
  const options = {
    taskQueue: opts.taskQueue,
    workflowId: opts.workflowId,
    args: [input],
    typedSearchAttributes: keelsonSearchAttributes({ kind: workflowKinds.op, workflowName: input.kind, project: opts.project, rib: opts.rib }),
    memo: { title: opts.title, opId: input.opId },
    staticSummary: `${opts.title.slice(0, 180)} · op ${input.opId.slice(0, 8)}`,
    staticDetails: [
      `**${opts.title}**`,
      '',
      `- op: \`${input.opId}\` (${input.kind})`,
      ...(opts.project ? [`- project: ${opts.project}`] : []),
      ...(opts.rib ? [`- rib: ${opts.rib}`] : []),
      '',
      `GraphQL: \`{ op(id: "${input.opId}") { status result error } }\``,
    ].join('\n'),
  };
  // The caller's wrapper types `input` as W's argument; the options object cannot say so generically.
  return client.workflow.start<W>(workflowType, options as unknown as WorkflowStartOptions<W>);
}

/** Starts an op as `durableOp`. */
export function startOpWorkflow(client: Client, opts: StartOpOptions): Promise<WorkflowHandleWithFirstExecutionRunId<typeof durableOp>> {
  return startOpExecution<typeof durableOp>(client, workflowTypes.durableOp, opts);
}
