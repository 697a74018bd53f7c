import { parseInput } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, Int, Resolver, Root } from 'type-graphql';
import { historyKey, memoryLoaders, type MemoryContext } from '../requestContext';
import { Conversation } from '../conversation/conversation.entity';
import { historyLimitSchema } from '../memory/memory.input';
import { MemoryMessage } from '../message/message.entity';
import { HarnessSession } from './harnessSession.type';
import { Task } from './task.type';

@Resolver(() => HarnessSession)
export class HarnessSessionResolver {
  @FieldResolver(() => [MemoryMessage], {
    description: "The session's newest messages in memory (default 50, at most 500), oldest first, including those before a rotation.",
  })
  history(
    @Root() session: HarnessSession,
    @Ctx() ctx: MemoryContext,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
  ): Promise<MemoryMessage[]> {
    return memoryLoaders(ctx).sessionHistory.load(historyKey({ id: session.id, limit: parseInput(historyLimitSchema, limit, 'limit') }));
  }

  @FieldResolver(() => Conversation, { nullable: true, description: "The session's conversation in memory (the first agent's), if captured." })
  conversation(@Root() session: HarnessSession, @Ctx() ctx: MemoryContext): Promise<Conversation | null> {
    return memoryLoaders(ctx).conversationOfSession.load(session.id);
  }
}

@Resolver(() => Task)
export class TaskMemoryResolver {
  @FieldResolver(() => [MemoryMessage], {
    description: "The task's newest messages (default 50, at most 500), oldest first, by task id or the legacy `task:<id>` key.",
  })
  history(@Root() task: Task, @Ctx() ctx: MemoryContext, @Arg('limit', () => Int, { nullable: true }) limit?: number | null): Promise<MemoryMessage[]> {
    return memoryLoaders(ctx).taskHistory.load(historyKey({ id: task.id, limit: parseInput(historyLimitSchema, limit, 'limit') }));
  }
}
