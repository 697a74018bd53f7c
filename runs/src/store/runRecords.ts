import { WHEN_VALUE_CHARS, type Caller, type RunNodeStatus, type RunStatus, type WorkflowDefinition } from '@keelson/schema';
import type { RunRow } from '../run/run.entity';

// The run store's records and the rows they are read from: the one mapping of the runs tables.
/** A run's managed checkout: the workspace lease it runs in, when `worktree.enabled`. */
export interface RunCheckoutRecord {
  leaseId: string | null;
  path: string | null;
  branch: string | null;
  worktreeEstablished: boolean;
}

export interface NewRun {
  id: string;
  workflowName: string;
  title: string;
  definition: WorkflowDefinition;
  /** Where the definition came from: bundled, global, project, rib or inline. */
  scope: string;
  inputs: Record<string, string>;
  projectId: string | null;
  projectName: string | null;
  /** The rib whose workflow this is. */
  ribId: string | null;
  startedByRibId: string | null;
  /** The caller that started the run; its agent turns act as it (null: none recorded). */
  startedBy?: Caller | null;
  cwd: string;
  artifactsDir: string;
  temporalWorkflowId: string;
}

/** What an activity needs of a run. */
export interface RunRecord {
  id: string;
  workflowName: string;
  definition: WorkflowDefinition;
  inputs: Record<string, string>;
  status: RunStatus;
  launch: number;
  cwd: string;
  artifactsDir: string;
  checkout: RunCheckoutRecord | null;
  projectId: string | null;
  ribId: string | null;
  startedByRibId: string | null;
  startedBy: Caller | null;
  temporalWorkflowId: string;
}

export interface NodeRecord {
  nodeId: string;
  status: RunNodeStatus;
  launch: number | null;
  attempt: number;
  failures: number;
  output: string | null;
  exitCode: number | null;
  error: string | null;
}

/** A node's state as a launch starts: final ones are never run again. */
export interface LaunchNodeState {
  status: RunNodeStatus;
  /** The first {@link WHEN_VALUE_CHARS} characters of the trimmed output (final nodes only). */
  value?: string;
}

export interface CapturedOutput {
  output: string;
  outputBytes: number;
  truncated: boolean;
  exitCode: number | null;
}

/** The columns of a run an activity reads ({@link RUN_COLUMNS}). */
export type RunRecordRow = Pick<
  RunRow,
  'id' | 'workflow_name' | 'definition' | 'inputs' | 'status' | 'launch' | 'cwd' | 'artifacts_dir' | 'checkout' | 'project_id' | 'rib_id' | 'started_by_rib_id' | 'started_by' | 'temporal_workflow_id'
>;

export interface NodeRow {
  node_id: string;
  status: RunNodeStatus;
  launch: number | null;
  attempt: number;
  failures: number;
  output: string | null;
  exit_code: number | null;
  error: string | null;
}

export const toRun = (r: RunRecordRow): RunRecord => ({
  id: r.id,
  workflowName: r.workflow_name,
  definition: r.definition,
  inputs: r.inputs,
  status: r.status,
  launch: r.launch,
  cwd: r.cwd,
  artifactsDir: r.artifacts_dir,
  checkout: r.checkout,
  projectId: r.project_id,
  ribId: r.rib_id,
  startedByRibId: r.started_by_rib_id,
  startedBy: r.started_by ?? null,
  temporalWorkflowId: r.temporal_workflow_id,
});

export const toNode = (r: NodeRow): NodeRecord => ({
  nodeId: r.node_id,
  status: r.status,
  launch: r.launch,
  attempt: r.attempt,
  failures: r.failures,
  output: r.output,
  exitCode: r.exit_code,
  error: r.error,
});

export const RUN_COLUMNS =
  'id, workflow_name, definition, inputs, status, launch, cwd, artifacts_dir, checkout, project_id, rib_id, started_by_rib_id, started_by, temporal_workflow_id';
export const NODE_COLUMNS = 'node_id, status, launch, attempt, failures, output, exit_code, error';

/** The approval inbox's name of a pause. */
export function approvalKeyOf(pauseId: string): string {
  return `run:${pauseId}`;
}

/** The value a `when` condition compares: the start of the trimmed output. */
export function whenValue(output: string | null | undefined): string {
  return (output ?? '').trim().slice(0, WHEN_VALUE_CHARS);
}
