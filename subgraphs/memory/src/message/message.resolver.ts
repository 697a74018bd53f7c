import { Ctx, FieldResolver, Resolver, Root } from 'type-graphql';
import { memoryLoaders, type MemoryContext } from '../requestContext';
import { Conversation } from '../conversation/conversation.entity';
import { MemoryMessage } from './message.entity';

@Resolver(() => MemoryMessage)
export class MessageResolver {
  @FieldResolver(() => Conversation)
  async conversation(@Root() message: MemoryMessage, @Ctx() ctx: MemoryContext): Promise<Conversation> {
    return (await memoryLoaders(ctx).conversation.load(message.conversationId))!;
  }
}
