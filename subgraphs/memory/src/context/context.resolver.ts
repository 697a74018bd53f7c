import { RequiresScope } from '@keelson/kit';
import { Arg, Ctx, Int, Query, Resolver } from 'type-graphql';
import type { MemoryContext } from '../requestContext';
import { toMemoryHit, TurnContext } from '../search/memoryHit.type';

@Resolver(() => TurnContext)
export class ContextResolver {
  @RequiresScope('read')
  @Query(() => TurnContext, {
    description:
      "The memory an agent should see for a turn: relevant and recent items within `maxTokens` (default 4000) by a real tokenizer count of the final text; never exceeds it.",
  })
  async contextForTurn(
    @Ctx() ctx: MemoryContext,
    @Arg('query') query: string,
    @Arg('agent') agent: string,
    @Arg('maxTokens', () => Int, { nullable: true }) maxTokens?: number | null,
  ): Promise<TurnContext> {
    const result = await ctx.services.context.contextForTurn({ query, agent, maxTokens });
    return Object.assign(new TurnContext(), { ...result, sources: result.sources.map(toMemoryHit) });
  }
}
