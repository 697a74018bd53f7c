import type { Caller, RunStatus, WorkflowDefinition } from '@keelson/schema';
import type { WorkflowScope } from '../catalog/catalogEntry';
import type { RunCheckoutRecord } from '../store/runRecords';
import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A run of a workflow definition; each launch (first start, every resume) is one `dagRun` execution. */
@Entity('runs')
export class Run {
  @PrimaryColumn('uuid')
  id!: string;

  /** Orders runs newest first; the connections' cursor. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq!: string;

  @Column('text', { name: 'workflow_name' })
  workflowName!: string;

  @Column('text')
  title!: string;

  @Column('text')
  status!: RunStatus;

  @Column('jsonb')
  inputs!: Record<string, string>;

  @Column('jsonb')
  definition!: unknown;

  @Column('text')
  scope!: WorkflowScope;

  @Column('timestamptz', { name: 'started_at' })
  startedAt!: Date;

  @Column('timestamptz', { name: 'completed_at', nullable: true })
  completedAt!: Date | null;

  @Column('text', { nullable: true })
  error!: string | null;

  @Column('text', { name: 'started_by_rib_id', nullable: true })
  startedByRibId!: string | null;

  /** The rib whose workflow this is (`Run.rib`). */
  @Column('text', { name: 'rib_id', nullable: true })
  ribId!: string | null;

  @Column('uuid', { name: 'project_id', nullable: true })
  projectId!: string | null;

  @Column('text', { name: 'project_name', nullable: true })
  projectName!: string | null;

  @Column('text')
  cwd!: string;

  @Column('text', { name: 'artifacts_dir' })
  artifactsDir!: string;

  @Column('jsonb', { name: 'checkout', nullable: true })
  checkoutRecord!: RunCheckoutRecord | null;

  @Column('text', { name: 'temporal_workflow_id' })
  temporalWorkflowId!: string;

  @Column('int')
  launch!: number;
}

/** A `runs` row as Postgres returns it (`SELECT r.*`): jsonb parsed, timestamptz as Date, bigint as text. */
export interface RunRow {
  id: string;
  seq: string;
  workflow_name: string;
  title: string;
  status: RunStatus;
  inputs: Record<string, string>;
  definition: WorkflowDefinition;
  scope: WorkflowScope;
  started_at: Date;
  completed_at: Date | null;
  error: string | null;
  started_by_rib_id: string | null;
  started_by: Caller | null;
  rib_id: string | null;
  project_id: string | null;
  project_name: string | null;
  cwd: string;
  artifacts_dir: string;
  checkout: RunCheckoutRecord | null;
  temporal_workflow_id: string;
  launch: number;
}

/**
 * The entity of a raw row, as TypeORM would hydrate it (same class, same values) without its
 * per-row metadata walk: the batched page query maps hundreds of rows per request.
 */
export function runFromRow(row: RunRow): Run {
  const run = new Run();
  run.id = row.id;
  run.seq = row.seq;
  run.workflowName = row.workflow_name;
  run.title = row.title;
  run.status = row.status;
  run.inputs = row.inputs;
  run.definition = row.definition;
  run.scope = row.scope;
  run.startedAt = row.started_at;
  run.completedAt = row.completed_at;
  run.error = row.error;
  run.startedByRibId = row.started_by_rib_id;
  run.ribId = row.rib_id;
  run.projectId = row.project_id;
  run.projectName = row.project_name;
  run.cwd = row.cwd;
  run.artifactsDir = row.artifacts_dir;
  run.checkoutRecord = row.checkout;
  run.temporalWorkflowId = row.temporal_workflow_id;
  run.launch = row.launch;
  return run;
}
