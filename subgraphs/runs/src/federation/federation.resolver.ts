import { parseInput, pageArgsSchema, type PageArgs } from '@keelson/kit';
import type { RunStatus } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, Int, Resolver, Root } from 'type-graphql';
import { toWorkflowDefinition, WorkflowDefinitionType } from '../catalog/workflowDefinition.type';
import { runsLoaders, type OwnerPage, type RunsContext } from '../context';
import { RunStatusEnum } from '../run/run.enums';
import { RunConnection } from '../run/run.types';
import { Project } from './project.type';
import { Rib } from './rib.type';

/** The page arguments, parsed once per request: every entity of an `_entities` fetch repeats them. */
function pageArgs(ctx: RunsContext, first: number | null | undefined, after: string | null | undefined): PageArgs {
  return ctx.loaders.memo(`pageArgs${JSON.stringify([first, after])}`, () => parseInput(pageArgsSchema, { first, after }));
}

@Resolver(() => Project)
export class ProjectRunsResolver {
  @FieldResolver(() => RunConnection, { description: "The project's runs, newest first." })
  runs(
    @Root() project: Project,
    @Ctx() ctx: RunsContext,
    @Arg('status', () => RunStatusEnum, { nullable: true }) status?: RunStatus | null,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<RunConnection> {
    const page: OwnerPage = { owner: `project:${project.id}`, status: status ?? null, args: pageArgs(ctx, first, after) };
    return runsLoaders(ctx).runsOfOwner.load(page);
  }
}

@Resolver(() => Rib)
export class RibRunsResolver {
  @FieldResolver(() => [WorkflowDefinitionType], { description: 'The workflows this rib contributes that the catalog serves (not shadowed by a file).' })
  async workflows(@Root() rib: Rib, @Ctx() ctx: RunsContext): Promise<WorkflowDefinitionType[]> {
    return (await runsLoaders(ctx).catalog.load('')).entries.filter((e) => e.ribId === rib.id).map(toWorkflowDefinition);
  }

  @FieldResolver(() => RunConnection, { description: "Runs of the rib's workflows and runs it started, newest first." })
  runs(
    @Root() rib: Rib,
    @Ctx() ctx: RunsContext,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<RunConnection> {
    const page: OwnerPage = { owner: `rib:${rib.id}`, status: null, args: pageArgs(ctx, first, after) };
    return runsLoaders(ctx).runsOfOwner.load(page);
  }
}
