import type { RunStatus } from '@keelson/schema';
import { JSONScalar } from '@keelson/kit';
import type { RunCheckoutRecord, WorkflowScope } from '@keelson/runs';
import { Directive, Field, ID, Int, ObjectType } from 'type-graphql';
import { Column, Entity, PrimaryColumn } from 'typeorm';
import { RunStatusEnum, WorkflowScopeEnum } from './run.enums';

/** A run of a workflow definition; each launch (first start, every resume) is one `dagRun` execution. */
@ObjectType({ description: 'A run of a workflow definition, executed by the `dagRun` Temporal workflow.' })
@Directive('@key(fields: "id")')
@Entity('runs')
export class Run {
  @Field(() => ID)
  @PrimaryColumn('uuid')
  id!: string;

  /** Orders runs newest first; the connections' cursor. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq!: string;

  @Field({ description: 'The catalog name the run was started from.' })
  @Column('text', { name: 'workflow_name' })
  workflowName!: string;

  @Field({ description: 'Shown as the memo title in the Temporal UI.' })
  @Column('text')
  title!: string;

  @Field(() => RunStatusEnum)
  @Column('text')
  status!: RunStatus;

  @Field(() => JSONScalar, { description: 'The string inputs the run was started with (defaults applied).' })
  @Column('jsonb')
  inputs!: Record<string, string>;

  @Field(() => JSONScalar, { description: 'The definition as it was when the run started (a resume uses the same).' })
  @Column('jsonb')
  definition!: unknown;

  @Field(() => WorkflowScopeEnum, { description: 'Where the definition came from.' })
  @Column('text')
  scope!: WorkflowScope;

  @Field(() => Date)
  @Column('timestamptz', { name: 'started_at' })
  startedAt!: Date;

  @Field(() => Date, { nullable: true })
  @Column('timestamptz', { name: 'completed_at', nullable: true })
  completedAt!: Date | null;

  @Field(() => String, { nullable: true, description: 'The run-level failure (or cancel reason).' })
  @Column('text', { nullable: true })
  error!: string | null;

  @Field(() => ID, { nullable: true, description: 'The rib that started the run, when one did.' })
  @Column('text', { name: 'started_by_rib_id', nullable: true })
  startedByRibId!: string | null;

  /** The rib whose workflow this is (`Run.rib`). */
  @Column('text', { name: 'rib_id', nullable: true })
  ribId!: string | null;

  @Column('uuid', { name: 'project_id', nullable: true })
  projectId!: string | null;

  @Column('text', { name: 'project_name', nullable: true })
  projectName!: string | null;

  @Field({ description: 'The working directory: the project root, a leased worktree, or the Keelson home.' })
  @Column('text')
  cwd!: string;

  @Field({ description: 'This run\'s $ARTIFACTS_DIR.' })
  @Column('text', { name: 'artifacts_dir' })
  artifactsDir!: string;

  @Column('jsonb', { name: 'checkout', nullable: true })
  checkoutRecord!: RunCheckoutRecord | null;

  @Field({ description: 'The Temporal workflow id (stable across resumes).' })
  @Column('text', { name: 'temporal_workflow_id' })
  temporalWorkflowId!: string;

  @Field(() => Int, { description: '1 for the first start, +1 for every resume.' })
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
  definition: unknown;
  scope: WorkflowScope;
  started_at: Date;
  completed_at: Date | null;
  error: string | null;
  started_by_rib_id: string | null;
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
