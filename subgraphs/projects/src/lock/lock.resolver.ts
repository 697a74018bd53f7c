import { RequiresScope } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, ID, Mutation, Resolver, Root } from 'type-graphql';
import { projectsLoaders, type ProjectsContext } from '../context';
import { Project } from '../project/project.entity';
import { MutationLock } from './lock.entity';

@Resolver(() => MutationLock)
export class LockResolver {
  @RequiresScope('write')
  @Mutation(() => MutationLock, { description: 'Acquire the advisory mutation lock; a second holder gets CONFLICT naming holder and purpose.' })
  acquireMutationLock(
    @Ctx() ctx: ProjectsContext,
    @Arg('projectId', () => ID) projectId: string,
    @Arg('purpose', () => String) purpose: string,
    @Arg('holder', () => String) holder: string,
  ): Promise<MutationLock> {
    return ctx.services.locks.acquire({ projectId, purpose, holder });
  }

  @RequiresScope('write')
  @Mutation(() => Boolean, { description: 'Release a mutation lock by id.' })
  releaseMutationLock(@Ctx() ctx: ProjectsContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    return ctx.services.locks.release(id);
  }

  @FieldResolver(() => Project)
  async project(@Root() lock: MutationLock, @Ctx() ctx: ProjectsContext): Promise<Project> {
    return (await projectsLoaders(ctx).project.load(lock.projectId))!;
  }
}
