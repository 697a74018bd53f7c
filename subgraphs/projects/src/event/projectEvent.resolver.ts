import { cursorSchema, streams, type EventEnvelope } from '@keelson/schema';
import { parseInput, RequiresScope } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, Resolver, Root, Subscription } from 'type-graphql';
import { projectsLoaders, type ProjectsContext } from '../context';
import { Project } from '../project/project.entity';
import type { ProjectEventPayload } from '../project/project.events';
import { ProjectEvent } from './projectEvent.type';

@Resolver(() => ProjectEvent)
export class ProjectEventResolver {
  @RequiresScope('read')
  @Subscription(() => ProjectEvent, {
    description: 'Every project mutation, in order. Pass the last cursor you saw as `after` to resume with nothing missed.',
    subscribe: ({ args, context }) => {
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      return (context as ProjectsContext).services.events.tail(streams.projects, after);
    },
  })
  projectEvents(
    @Root() event: EventEnvelope<ProjectEventPayload>,
    @Arg('after', () => String, { nullable: true }) _after?: string | null,
  ): ProjectEvent {
    return Object.assign(new ProjectEvent(), {
      cursor: event.cursor,
      type: event.type,
      projectId: event.payload.projectId,
      leaseId: event.payload.leaseId ?? null,
      lockId: event.payload.lockId ?? null,
      at: event.at,
    });
  }

  @FieldResolver(() => Project, { nullable: true, description: 'The project as it is now (null if it no longer exists).' })
  project(@Root() event: ProjectEvent, @Ctx() ctx: ProjectsContext): Promise<Project | null> {
    return projectsLoaders(ctx).project.load(event.projectId);
  }
}
