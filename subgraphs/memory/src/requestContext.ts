import { type EventLog } from '@keelson/platform';
import { byKeys, groupByKeys, type SubgraphContext } from '@keelson/kit';
import type { CaptureConsumer } from './capture/captureConsumer';
import type { ChatCaptureConsumer } from './capture/chatCaptureConsumer';
import type { RunCaptureConsumer } from './capture/runCaptureConsumer';
import type { ContextService } from './context/context.service';
import type { Conversation } from './conversation/conversation.entity';
import type { HistoryRequest, HistoryService, MessagePage, PageRequest } from './memory/history.service';
import type { MemoryService } from './memory/memory.service';
import type { MemoryMessage } from './message/message.entity';
import type { SearchService } from './search/search.service';
import type { VectorIndexer } from './search/vectorIndexer';
import type { SearchModeInfo } from './search/searchMode';
import type { MemorySummary } from './summary/summary.entity';
import type { SummaryService } from './summary/summary.service';

export interface MemoryServices {
  memory: MemoryService;
  history: HistoryService;
  summaries: SummaryService;
  search: SearchService;
  context: ContextService;
  events: EventLog;
  /** The search mode now: decided at boot, LEXICAL while a HYBRID store's embeddings endpoint fails. */
  readonly mode: SearchModeInfo;
  /** Present in HYBRID mode: embeds what is committed (`idle()` resolves once it has caught up). */
  indexer?: VectorIndexer;
  /** Present when a transcript source was given: the harness-stream consumer. */
  capture?: CaptureConsumer;
  /** Present when a run source was given: the runs-stream consumer (prompt-node turns). */
  runCapture?: RunCaptureConsumer;
  /** Present with capture: the chats-stream consumer (chat messages carry their text). */
  chatCapture?: ChatCaptureConsumer;
}

export interface MemoryContext extends SubgraphContext {
  services: MemoryServices;
}

/** Loader keys are strings (DataLoader caches by identity): `<limit>\0<id>` and `<conversation>\0<after>\0<first>`. */
export const historyKey = (r: HistoryRequest) => `${r.limit}\u0000${r.id}`;
export const historyPageKey = (r: PageRequest) => `${r.conversationId}\u0000${r.afterSeq}\u0000${r.first}`;

function parseHistoryKey(key: string): HistoryRequest {
  const at = key.indexOf('\u0000');
  return { limit: Number(key.slice(0, at)), id: key.slice(at + 1) };
}

function parsePageKey(key: string): PageRequest {
  const [conversationId, afterSeq, first] = key.split('\u0000');
  return { conversationId: conversationId!, afterSeq: Number(afterSeq), first: Number(first) };
}

/** The per-request loaders of this subgraph; every field and reference resolver goes through them. */
export function memoryLoaders(ctx: MemoryContext) {
  return ctx.loaders.setOf(makeMemoryLoaders, ctx);
}

function makeMemoryLoaders(ctx: MemoryContext) {
  const { loaders, services } = ctx;
  return {
    conversation: loaders.get<string, Conversation | null>('conversation', async (ids) =>
      byKeys(ids, await services.history.conversationsByIds(ids), (c) => c.id),
    ),
    conversationOfSession: loaders.get<string, Conversation | null>('conversationOfSession', (ids) =>
      services.history.conversationsOfSessions(ids),
    ),
    /** Keys from `historyKey`. */
    sessionHistory: loaders.get<string, MemoryMessage[]>('sessionHistory', (keys) =>
      services.history.sessionHistories(keys.map(parseHistoryKey)),
    ),
    /** Keys from `historyKey`. */
    taskHistory: loaders.get<string, MemoryMessage[]>('taskHistory', (keys) =>
      services.history.taskHistories(keys.map(parseHistoryKey)),
    ),
    /** Keys from `pageKey`. */
    messagePage: loaders.get<string, MessagePage>('messagePage', (keys) => services.history.messagePages(keys.map(parsePageKey))),
    summariesOfConversation: loaders.get<string, MemorySummary[]>('summariesOfConversation', async (ids) =>
      groupByKeys(ids, await services.summaries.ofConversations(ids), (s) => s.conversationId),
    ),
    sessionSettings: loaders.get<string, Record<string, unknown> | null>('sessionSettings', (ids) =>
      services.memory.sessionSettings(ids),
    ),
  };
}
