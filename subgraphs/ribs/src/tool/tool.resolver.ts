import { parseInput, RequiresScope } from '@keelson/kit';
import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import type { RibsContext } from '../context';
import { ribIdSchema, toolNamesSchema } from '../inputs';
import { ToolReachability, reachabilityStatusOf } from './tool.type';

@Resolver()
export class ToolResolver {
  @RequiresScope('read')
  @Query(() => [ToolReachability], {
    description: "Pre-flight of the operator floor for tool names a rib's turn would carry: registration, cross-rib grants, the denylist (not policies).",
  })
  toolReachability(@Ctx() ctx: RibsContext, @Arg('ribId', () => ID) ribId: string, @Arg('names', () => [String]) names: string[]): ToolReachability[] {
    const id = parseInput(ribIdSchema, ribId, 'ribId');
    return ctx.services.host.toolReachability(id, parseInput(toolNamesSchema, names, 'names')).map((r) =>
      Object.assign(new ToolReachability(), { name: r.name, status: reachabilityStatusOf(r.status), ownerRibId: r.ownerRibId ?? null }),
    );
  }
}
