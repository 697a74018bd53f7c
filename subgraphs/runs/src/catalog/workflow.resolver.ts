import { RequiresScope } from '@keelson/kit';
import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import { runsLoaders, type RunsContext } from '../context';
import { toLoadError, toWorkflowDefinition, WorkflowDefinitionType, WorkflowLoadErrorType } from './workflowDefinition.type';

@Resolver(() => WorkflowDefinitionType)
export class WorkflowResolver {
  @RequiresScope('read')
  @Query(() => [WorkflowDefinitionType], {
    description:
      "The workflow catalog, by name. With projectId, as that project sees it: its own .keelson/workflows are added (listed whether or not the project is trusted), a colliding one as project:<name>.",
  })
  async workflows(@Ctx() ctx: RunsContext, @Arg('projectId', () => ID, { nullable: true }) projectId?: string | null): Promise<WorkflowDefinitionType[]> {
    return (await runsLoaders(ctx).catalog.load(projectId ?? '')).entries.map(toWorkflowDefinition);
  }

  @RequiresScope('read')
  @Query(() => WorkflowDefinitionType, { nullable: true, description: 'One workflow by name, resolved as startWorkflow would.' })
  async workflow(
    @Ctx() ctx: RunsContext,
    @Arg('name') name: string,
    @Arg('projectId', () => ID, { nullable: true }) projectId?: string | null,
  ): Promise<WorkflowDefinitionType | null> {
    const entry = (await runsLoaders(ctx).catalog.load(projectId ?? '')).entries.find((e) => e.name === name);
    return entry ? toWorkflowDefinition(entry) : null;
  }

  @RequiresScope('read')
  @Query(() => [WorkflowLoadErrorType], { description: 'Definitions the catalog rejected (each names the field and the reason).' })
  async workflowLoadErrors(@Ctx() ctx: RunsContext, @Arg('projectId', () => ID, { nullable: true }) projectId?: string | null): Promise<WorkflowLoadErrorType[]> {
    return (await runsLoaders(ctx).catalog.load(projectId ?? '')).errors.map(toLoadError);
  }
}
