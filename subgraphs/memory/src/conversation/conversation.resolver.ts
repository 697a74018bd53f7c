import { parseInput, RequiresScope } from '@keelson/kit';
import { isUuid } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, ID, Int, Query, Resolver, Root } from 'type-graphql';
import { memoryLoaders, historyPageKey, type MemoryContext } from '../requestContext';
import { MessageConnection, messagePageArgsSchema, toConnection } from '../message/message.connection';
import { MemorySummary } from '../summary/summary.entity';
import { Conversation } from './conversation.entity';

@Resolver(() => Conversation)
export class ConversationResolver {
  @RequiresScope('read')
  @Query(() => Conversation, { nullable: true, description: 'One conversation by id.' })
  conversation(@Ctx() ctx: MemoryContext, @Arg('id', () => ID) id: string): Promise<Conversation | null> {
    return isUuid(id) ? memoryLoaders(ctx).conversation.load(id) : Promise.resolve(null);
  }

  @FieldResolver(() => MessageConnection, { description: 'Messages in conversation order (Relay connection; `first` default 50, at most 500).' })
  async messages(
    @Root() conversation: Conversation,
    @Ctx() ctx: MemoryContext,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<MessageConnection> {
    const args = parseInput(messagePageArgsSchema, { first, after }, 'messages');
    const page = await memoryLoaders(ctx).messagePage.load(historyPageKey({ conversationId: conversation.id, afterSeq: args.after, first: args.first }));
    return toConnection(page.messages, page.hasNextPage);
  }

  @FieldResolver(() => [MemorySummary], { description: 'Summaries of message ranges, in range order.' })
  summaries(@Root() conversation: Conversation, @Ctx() ctx: MemoryContext): Promise<MemorySummary[]> {
    return memoryLoaders(ctx).summariesOfConversation.load(conversation.id);
  }
}
