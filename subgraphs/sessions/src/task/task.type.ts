import type { TaskRecord } from '@keelson/harness';
import { runStatuses, type RunStatus } from '@keelson/schema';
import { Directive, Field, ID, ObjectType, registerEnumType } from 'type-graphql';

export const TaskRunStatusEnum = Object.fromEntries(runStatuses.map((s) => [s, s])) as { [K in RunStatus]: K };
registerEnumType(TaskRunStatusEnum, { name: 'RunStatus' });

@ObjectType({ description: 'A harness run headless for a prompt, as the Temporal workflow harnessTask.' })
@Directive('@key(fields: "id")')
export class Task {
  @Field(() => ID)
  id!: string;

  @Field()
  prompt!: string;

  @Field(() => TaskRunStatusEnum)
  status!: RunStatus;

  @Field(() => String, { nullable: true, description: "The CLI's final answer (cut to 4096 characters)." })
  result!: string | null;

  @Field(() => String, { nullable: true })
  error!: string | null;

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  completedAt!: Date | null;

  @Field({ description: 'The harnessTask workflow (`harness-task-<id>`), searchable by KeelsonKind, KeelsonHarness and KeelsonProject.' })
  temporalWorkflowId!: string;

  @Field(() => String, { nullable: true })
  temporalRunId!: string | null;

  harnessId!: string;
  sessionId!: string | null;
  projectId!: string | null;
}

export function toTask(t: TaskRecord): Task {
  return Object.assign(new Task(), {
    id: t.id,
    prompt: t.prompt,
    status: t.status,
    result: t.result,
    error: t.error,
    createdAt: t.createdAt,
    completedAt: t.completedAt,
    temporalWorkflowId: t.workflowId,
    temporalRunId: t.runId,
    harnessId: t.harnessId,
    sessionId: t.sessionId,
    projectId: t.projectId,
  });
}
