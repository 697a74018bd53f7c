import { byId, IDEMPOTENCY_KEY, workflowsDigest } from '@keelson/platform';
import { RequiresScope } from '@keelson/kit';
import { MeshError, isUuid } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { projectsLoaders, type ProjectsContext } from '../context';
import { MutationLock } from '../lock/lock.entity';
import { WorkspaceLease } from '../workspace/workspace.entity';
import { Project } from './project.entity';
import { CloneProjectInput, CreateProjectInput } from './project.input';

/** A created project, reloaded for a repeat of its idempotency key. */
const projectById = (ctx: ProjectsContext) => byId(async (id) => (await ctx.services.projects.byIds([id]))[0] ?? null);

@Resolver(() => Project)
export class ProjectResolver {
  @RequiresScope('read')
  @Query(() => [Project], { description: 'Every registered project, oldest first.' })
  projects(@Ctx() ctx: ProjectsContext): Promise<Project[]> {
    return ctx.services.projects.list();
  }

  @RequiresScope('read')
  @Query(() => Project, { nullable: true, description: 'One project by id or by name (exactly one of them).' })
  async project(
    @Ctx() ctx: ProjectsContext,
    @Arg('id', () => ID, { nullable: true }) id?: string | null,
    @Arg('name', () => String, { nullable: true }) name?: string | null,
  ): Promise<Project | null> {
    if ((id == null) === (name == null)) throw new MeshError('BAD_USER_INPUT', 'project: pass exactly one of id or name');
    if (id != null) return isUuid(id) ? projectsLoaders(ctx).project.load(id) : null;
    return ctx.services.projects.byName(name!);
  }

  @RequiresScope('write')
  @Mutation(() => Project, { description: 'Create or register a project (seed 000 "Project creation").' })
  createProject(
    @Ctx() ctx: ProjectsContext,
    @Arg('input', () => CreateProjectInput) input: CreateProjectInput,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<Project> {
    const call = { caller: ctx.caller, mutation: 'createProject', key: idempotencyKey, input: { ...input } };
    // One transaction: the key's claim commits with the project row, so a crash between them frees the key.
    return ctx.services.idempotency.runInTransaction(call, projectById(ctx), (m) => ctx.services.projects.create({ ...input }, m));
  }

  @RequiresScope('write')
  @Mutation(() => Project, { description: 'Clone an https/ssh repository beneath the workspace root and register it.' })
  cloneProject(
    @Ctx() ctx: ProjectsContext,
    @Arg('input', () => CloneProjectInput) input: CloneProjectInput,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<Project> {
    const call = { caller: ctx.caller, mutation: 'cloneProject', key: idempotencyKey, input: { ...input } };
    return ctx.services.idempotency.run(call, projectById(ctx), () => ctx.services.projects.clone({ ...input }));
  }

  @RequiresScope('admin')
  @Mutation(() => Project, {
    description:
      "Trust or distrust a project: its own workflows (`<root>/.keelson/workflows`) run only while it is trusted. Appends PROJECT_TRUSTED or PROJECT_UNTRUSTED when the value changes.",
  })
  setProjectTrust(
    @Ctx() ctx: ProjectsContext,
    @Arg('projectId', () => ID) projectId: string,
    @Arg('trusted', () => Boolean) trusted: boolean,
  ): Promise<Project> {
    return ctx.services.projects.setTrust({ projectId, trusted });
  }

  @FieldResolver(() => Boolean, {
    description:
      "Whether the project's own workflows (`<root>/.keelson/workflows`) may run. Listed either way; starting one of an untrusted " +
      'project is FORBIDDEN. Created from a missing or empty folder: trusted; cloned: not; an existing folder: trusted unless it ' +
      'already has .keelson/workflows. Changed by setProjectTrust. Trust covers the workflow files as they were when it was given: ' +
      'a changed or new file makes this false until setProjectTrust again.',
  })
  async trusted(@Root() project: Project): Promise<boolean> {
    return project.trusted && project.trustedWorkflows !== null && project.trustedWorkflows === (await workflowsDigest(project.rootPath));
  }

  @FieldResolver(() => String, {
    nullable: true,
    description:
      'The digest (`sha256:…`) of `.keelson/workflows` as it was when trust was given; null while not trusted. A project workflow ' +
      'starts only when the files it was loaded from have this digest, so a file changed between the trust check and the load never runs.',
  })
  trustedWorkflowsDigest(@Root() project: Project): string | null {
    return project.trusted ? project.trustedWorkflows : null;
  }

  @FieldResolver(() => Boolean, { description: 'Whether the root is a git repository (read at request time).' })
  async isGitRepo(@Root() project: Project, @Ctx() ctx: ProjectsContext): Promise<boolean> {
    return (await projectsLoaders(ctx).gitState.load(project.rootPath)).isGitRepo;
  }

  @FieldResolver(() => String, { nullable: true, description: 'HEAD commit; null for unborn repositories and non-git folders.' })
  async headCommit(@Root() project: Project, @Ctx() ctx: ProjectsContext): Promise<string | null> {
    return (await projectsLoaders(ctx).gitState.load(project.rootPath)).headCommit;
  }

  @FieldResolver(() => [WorkspaceLease], { description: 'Live workspace leases (git worktrees).' })
  workspaces(@Root() project: Project, @Ctx() ctx: ProjectsContext): Promise<WorkspaceLease[]> {
    return projectsLoaders(ctx).leasesOfProject.load(project.id);
  }

  @FieldResolver(() => MutationLock, { nullable: true, description: 'The current mutation-lock holder, if any.' })
  mutationLock(@Root() project: Project, @Ctx() ctx: ProjectsContext): Promise<MutationLock | null> {
    return projectsLoaders(ctx).lockOfProject.load(project.id);
  }
}
