import { RequiresScope } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { memoryLoaders, type MemoryContext } from '../requestContext';
import { Conversation } from '../conversation/conversation.entity';
import { MemorySummary } from './summary.entity';
import { ConversationRange, SummaryInput } from './summary.input';

@Resolver(() => MemorySummary)
export class SummaryResolver {
  @FieldResolver(() => Conversation)
  async conversation(@Root() summary: MemorySummary, @Ctx() ctx: MemoryContext): Promise<Conversation> {
    return (await memoryLoaders(ctx).conversation.load(summary.conversationId))!;
  }

  @RequiresScope('read')
  @Query(() => [ConversationRange], {
    description:
      'What compaction summarises next: each full window of `window` messages (default 50; k·window+1 .. (k+1)·window) of a conversation with no summary of that range, most recently active conversations first. `limit` default 20, at most 500.',
  })
  compactionCandidates(
    @Ctx() ctx: MemoryContext,
    @Arg('window', () => Int, { nullable: true }) window?: number | null,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
  ): Promise<ConversationRange[]> {
    return ctx.services.summaries.candidates({ window, limit }) as Promise<ConversationRange[]>;
  }

  @RequiresScope('write')
  @Mutation(() => MemorySummary, {
    description: 'Stores the summary of a conversation range once (the compaction workflow writes these); a repeat returns the stored summary unchanged. NOT_FOUND for an unknown conversation.',
  })
  saveSummary(@Ctx() ctx: MemoryContext, @Arg('input', () => SummaryInput) input: SummaryInput): Promise<MemorySummary> {
    return ctx.services.summaries.save({ ...input });
  }
}

@Resolver(() => ConversationRange)
export class ConversationRangeResolver {
  @FieldResolver(() => Conversation)
  async conversation(@Root() range: ConversationRange, @Ctx() ctx: MemoryContext): Promise<Conversation> {
    return (await memoryLoaders(ctx).conversation.load(range.conversationId))!;
  }
}
