import type { ReferenceResolvers } from '@keelson/kit';
import { memoryLoaders, type MemoryContext } from '../requestContext';
import { HarnessSession } from './harnessSession.type';
import { Task } from './task.type';

/**
 * Entity references the gateway resolves through this subgraph. HarnessSession and Task belong to
 * the sessions subgraph: memory needs only their id, so their references cost no query.
 */
export const memoryReferenceResolvers: ReferenceResolvers = {
  Conversation: {
    __resolveReference: (ref: { id: string }, ctx: MemoryContext) => memoryLoaders(ctx).conversation.load(ref.id),
  },
  HarnessSession: {
    __resolveReference: (ref: { id: string }) => Object.assign(new HarnessSession(), { id: ref.id }),
  },
  Task: {
    __resolveReference: (ref: { id: string }) => Object.assign(new Task(), { id: ref.id }),
  },
} as ReferenceResolvers;
