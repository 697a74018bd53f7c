import { Ctx, FieldResolver, Resolver, Root } from 'type-graphql';
import { loadersOf, type MemoryContext } from '../context';
import { Conversation } from '../conversation/conversation.entity';
import { MemorySummary } from './summary.entity';

@Resolver(() => MemorySummary)
export class SummaryResolver {
  @FieldResolver(() => Conversation)
  async conversation(@Root() summary: MemorySummary, @Ctx() ctx: MemoryContext): Promise<Conversation> {
    return (await loadersOf(ctx).conversation.load(summary.conversationId))!;
  }
}
