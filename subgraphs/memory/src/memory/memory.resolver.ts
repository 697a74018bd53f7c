import { JSONScalar, parseInput, RequiresScope } from '@keelson/kit';
import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { historyKey, memoryLoaders, type MemoryContext } from '../requestContext';
import { MemoryMessage } from '../message/message.entity';
import { historyLimitSchema, MemoryEntryInput, sessionIdSchema, taskIdSchema } from './memory.input';

@Resolver()
export class MemoryResolver {
  @RequiresScope('read')
  @Query(() => [MemoryMessage], {
    description:
      "The session's newest messages (default 50, at most 500), oldest first, across every agent's conversation of it and of the ids it rotated from.",
  })
  sessionHistory(
    @Ctx() ctx: MemoryContext,
    @Arg('sessionId', () => ID) sessionId: string,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
  ): Promise<MemoryMessage[]> {
    const id = parseInput(sessionIdSchema, sessionId, 'sessionId');
    return memoryLoaders(ctx).sessionHistory.load(historyKey({ id, limit: parseInput(historyLimitSchema, limit, 'limit') }));
  }

  @RequiresScope('read')
  @Query(() => [MemoryMessage], {
    description:
      "The task's newest messages (default 50, at most 500), oldest first: conversations stamped with the task id and legacy ones keyed `task:<id>`.",
  })
  taskHistory(
    @Ctx() ctx: MemoryContext,
    @Arg('taskId', () => ID) taskId: string,
    @Arg('limit', () => Int, { nullable: true }) limit?: number | null,
  ): Promise<MemoryMessage[]> {
    const id = parseInput(taskIdSchema, taskId, 'taskId');
    return memoryLoaders(ctx).taskHistory.load(historyKey({ id, limit: parseInput(historyLimitSchema, limit, 'limit') }));
  }

  @RequiresScope('read')
  @Query(() => JSONScalar, { nullable: true, description: 'The settings saved for the session, or null.' })
  sessionSettings(@Ctx() ctx: MemoryContext, @Arg('sessionId', () => ID) sessionId: string): Promise<Record<string, unknown> | null> {
    return memoryLoaders(ctx).sessionSettings.load(parseInput(sessionIdSchema, sessionId, 'sessionId'));
  }

  @RequiresScope('write')
  @Mutation(() => ID, { description: 'Stores one message and returns its id; a repeated `dedupeKey` stores nothing and returns the stored id.' })
  appendMemory(@Ctx() ctx: MemoryContext, @Arg('entry', () => MemoryEntryInput) entry: MemoryEntryInput): Promise<string> {
    return ctx.services.memory.append({ ...entry });
  }

  @RequiresScope('write')
  @Mutation(() => Boolean, { description: "Replaces the session's settings (a JSON object of at most 64 KiB)." })
  saveSessionSettings(
    @Ctx() ctx: MemoryContext,
    @Arg('sessionId', () => ID) sessionId: string,
    @Arg('settings', () => JSONScalar) settings: unknown,
  ): Promise<boolean> {
    return ctx.services.memory.saveSessionSettings(sessionId, settings);
  }
}
