import type { RunStatus } from '@keelson/schema';
import { JSONScalar } from '@keelson/kit';
import type { WorkflowScope } from '@keelson/runs';
import { Directive, Field, ID, Int, ObjectType } from 'type-graphql';
import { RunStatusEnum, WorkflowScopeEnum } from './run.enums';

/** A run of a workflow definition; each launch (first start, every resume) is one `dagRun` execution. */
@ObjectType('Run', { description: 'A run of a workflow definition, executed by the `dagRun` Temporal workflow.' })
@Directive('@key(fields: "id")')
export class RunType {
  @Field(() => ID)
  id!: string;

  @Field({ description: 'The catalog name the run was started from.' })
  workflowName!: string;

  @Field({ description: 'Shown as the memo title in the Temporal UI.' })
  title!: string;

  @Field(() => RunStatusEnum)
  status!: RunStatus;

  @Field(() => JSONScalar, { description: 'The string inputs the run was started with (defaults applied).' })
  inputs!: Record<string, string>;

  @Field(() => JSONScalar, { description: 'The definition as it was when the run started (a resume uses the same).' })
  definition!: unknown;

  @Field(() => WorkflowScopeEnum, { description: 'Where the definition came from.' })
  scope!: WorkflowScope;

  @Field(() => Date)
  startedAt!: Date;

  @Field(() => Date, { nullable: true })
  completedAt!: Date | null;

  @Field(() => String, { nullable: true, description: 'The run-level failure (or cancel reason).' })
  error!: string | null;

  @Field(() => ID, { nullable: true, description: 'The rib that started the run, when one did.' })
  startedByRibId!: string | null;

  @Field({ description: 'The working directory: the project root, a leased worktree, or the Keelson home.' })
  cwd!: string;

  @Field({ description: 'This run\'s $ARTIFACTS_DIR.' })
  artifactsDir!: string;

  @Field({ description: 'The Temporal workflow id (stable across resumes).' })
  temporalWorkflowId!: string;

  @Field(() => Int, { description: '1 for the first start, +1 for every resume.' })
  launch!: number;
}
