import { Ctx, FieldResolver, Resolver, Root } from 'type-graphql';
import { loadersOf, type MemoryContext } from '../context';
import { Conversation } from '../conversation/conversation.entity';
import { MemoryMessage } from './message.entity';

@Resolver(() => MemoryMessage)
export class MessageResolver {
  @FieldResolver(() => Conversation)
  async conversation(@Root() message: MemoryMessage, @Ctx() ctx: MemoryContext): Promise<Conversation> {
    return (await loadersOf(ctx).conversation.load(message.conversationId))!;
  }
}
