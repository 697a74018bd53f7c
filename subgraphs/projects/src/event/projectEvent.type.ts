import { projectEventTypes, type ProjectEventType } from '@keelson/schema';
import { Field, ID, ObjectType, registerEnumType } from 'type-graphql';

export const ProjectEventTypeEnum = Object.fromEntries(projectEventTypes.map((t) => [t, t])) as {
  [K in ProjectEventType]: K;
};
registerEnumType(ProjectEventTypeEnum, { name: 'ProjectEventType', description: 'What a project event reports.' });

/** One entry of the projects stream: a mutation of a project, its leases or its lock. */
@ObjectType({ description: 'One entry of the projects stream: a mutation of a project, its leases or its lock.' })
export class ProjectEvent {
  @Field({ description: 'Opaque; pass as `after` to resume right after this event.' })
  cursor!: string;

  @Field(() => ProjectEventTypeEnum)
  type!: ProjectEventType;

  projectId!: string;

  @Field(() => ID, { nullable: true, description: 'The workspace lease the event is about, if any.' })
  leaseId!: string | null;

  @Field(() => ID, { nullable: true, description: 'The mutation lock the event is about, if any.' })
  lockId!: string | null;

  @Field(() => Date)
  at!: Date;
}
