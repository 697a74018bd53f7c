import { buildFederatedSchema, type FederatedSchema } from '@keelson/kit';
import { ContextResolver } from './context/context.resolver';
import { ConversationResolver } from './conversation/conversation.resolver';
import { HarnessSessionResolver, TaskMemoryResolver } from './federation/federation.resolver';
import { HarnessSession } from './federation/harnessSession.type';
import { memoryReferenceResolvers } from './federation/references';
import { Task } from './federation/task.type';
import { MemoryResolver } from './memory/memory.resolver';
import { MessageResolver } from './message/message.resolver';
import { SearchResolver } from './search/search.resolver';
import { ConversationRangeResolver, SummaryResolver } from './summary/summary.resolver';

/** The memory subgraph schema; needs no database, so composition can build it offline. */
export function buildMemorySchema(): Promise<FederatedSchema> {
  return buildFederatedSchema({
    resolvers: [
      MemoryResolver,
      SearchResolver,
      ContextResolver,
      ConversationResolver,
      MessageResolver,
      SummaryResolver,
      ConversationRangeResolver,
      HarnessSessionResolver,
      TaskMemoryResolver,
    ],
    // Owned by the sessions subgraph and reachable only through it: declared here for the fields memory adds.
    orphanedTypes: [HarnessSession, Task],
    referenceResolvers: memoryReferenceResolvers,
  });
}
