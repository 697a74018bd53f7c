import { RequiresScope } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, ID, Mutation, Resolver, Root } from 'type-graphql';
import { projectsLoaders, type ProjectsContext } from '../context';
import { Project } from '../project/project.entity';
import { WorkspaceBase, WorkspaceLease } from './workspace.entity';

@Resolver(() => WorkspaceLease)
export class WorkspaceResolver {
  @RequiresScope('write')
  @Mutation(() => WorkspaceLease, {
    description:
      'Lease an isolated git worktree of the project on its own branch, branched from `base` and dependency-prepared (the detected ' +
      '`npm ci`, `go mod download`, …, run sandboxed with network). A failed fetch or preparation is UPSTREAM_FAILED (the preparation ' +
      'in `extensions.prepare`) and leaves no worktree, branch or lease behind.',
  })
  acquireWorkspace(
    @Ctx() ctx: ProjectsContext,
    @Arg('projectId', () => ID) projectId: string,
    @Arg('purpose', () => String, { nullable: true }) purpose?: string | null,
    @Arg('base', () => WorkspaceBase, { nullable: true, description: 'Where to branch from. @default ORIGIN_DEFAULT when the project has an origin remote, else HEAD' })
    base?: WorkspaceBase | null,
  ): Promise<WorkspaceLease> {
    return ctx.services.workspaces.acquire({ projectId, purpose, base });
  }

  @RequiresScope('write')
  @Mutation(() => Boolean, { description: 'Remove the worktree and end the lease (the branch is kept); false if already released.' })
  releaseWorkspace(@Ctx() ctx: ProjectsContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    return ctx.services.workspaces.release(id);
  }

  @FieldResolver(() => Project)
  async project(@Root() lease: WorkspaceLease, @Ctx() ctx: ProjectsContext): Promise<Project> {
    return (await projectsLoaders(ctx).project.load(lease.projectId))!;
  }
}
