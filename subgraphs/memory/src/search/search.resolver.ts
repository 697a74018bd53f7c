import { RequiresScope } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, Int, Query, Resolver, Root } from 'type-graphql';
import { memoryLoaders, type MemoryContext } from '../requestContext';
import { Conversation } from '../conversation/conversation.entity';
import { MemoryHit, MemoryScope, MemorySearchModeInfo, toMemoryHit } from './memoryHit.type';
import type { MemoryScopeValue } from './search.service';

@Resolver(() => MemoryHit)
export class SearchResolver {
  @RequiresScope('read')
  @Query(() => [MemoryHit], {
    description:
      'Search memory: Postgres full text (websearch syntax) plus trigram similarity for identifiers and paths, plus vectors in HYBRID mode, fused and ranked. `limit` default 10 (at most 100); `scope` default BOTH.',
  })
  async memorySearch(
    @Ctx() ctx: MemoryContext,
    @Arg('query') query: string,
    @Arg('agent', () => String, { nullable: true }) agent?: string | null,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
    @Arg('scope', () => MemoryScope, { nullable: true }) scope?: MemoryScopeValue | null,
  ): Promise<MemoryHit[]> {
    const hits = await ctx.services.search.search({ query, agent, limit, scope });
    return hits.map(toMemoryHit);
  }

  @RequiresScope('read')
  @Query(() => MemorySearchModeInfo, { description: 'Which memory search is active (LEXICAL or HYBRID), and why.' })
  memorySearchMode(@Ctx() ctx: MemoryContext): MemorySearchModeInfo {
    return Object.assign(new MemorySearchModeInfo(), ctx.services.mode);
  }

  @FieldResolver(() => Conversation)
  async conversation(@Root() hit: MemoryHit, @Ctx() ctx: MemoryContext): Promise<Conversation> {
    return (await memoryLoaders(ctx).conversation.load(hit.conversationId))!;
  }
}
