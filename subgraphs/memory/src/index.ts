import { openDomainState, AuditLog, type DomainState } from '@keelson/platform';
import { singleCapabilityWatcher, type CapabilityWatcher } from '@keelson/operator';
import { serveDomain, type SubgraphStartOptions } from '@keelson/kit';
import { CaptureConsumer } from './capture/captureConsumer';
import { ChatCaptureConsumer } from './capture/chatCaptureConsumer';
import { RunCaptureConsumer } from './capture/runCaptureConsumer';
import type { RunTurnSource } from './capture/runTurnSource';
import type { TranscriptSource } from './capture/transcriptSource';
import type { MemoryServices } from './requestContext';
import { ContextService } from './context/context.service';
import { Conversation } from './conversation/conversation.entity';
import { HistoryService } from './memory/history.service';
import { MemoryService } from './memory/memory.service';
import { MemoryMessage } from './message/message.entity';
import { MemoryTables1764460800500 } from './migrations/1764460800500-MemoryTables';
import { MemoryCursorsToPlatform1764460800510 } from './migrations/1764460800510-MemoryCursorsToPlatform';
import { MemoryMessageAgent1764460800520 } from './migrations/1764460800520-MemoryMessageAgent';
import { buildMemorySchema } from './schema';
import { EmbeddingsClient } from './search/embeddings';
import { SearchService } from './search/search.service';
import { detectSearchMode, SearchModeState } from './search/searchMode';
import { VectorIndexer } from './search/vectorIndexer';
import type { MemorySettings } from './settings';
import { MemorySummary } from './summary/summary.entity';
import { SummaryService } from './summary/summary.service';

export { buildMemorySchema } from './schema';
export { loadMemoryConfig, memorySettings } from './config';
export type { MemoryConfig } from './config';
export type { MemorySettings, EmbeddingsSettings } from './settings';
export type { MemoryServices } from './requestContext';
export type { MemoryEntry } from './memory/memory.input';
export type { AppendResult } from './memory/memory.service';
export type { Hit, SearchArgs } from './search/search.service';
export type { SearchModeInfo } from './search/searchMode';
export { EMBED_CHARS, embedPending, hnswEfSearch, hnswIndexName, indexedVector, vectorSpace } from './search/vectorStore';
export type { VectorStore } from './search/vectorStore';
export type { TurnContextResult } from './context/context.service';
export { CaptureConsumer } from './capture/captureConsumer';
export type { CaptureConsumerOptions } from './capture/captureConsumer';
export type { CapturedTranscriptEntry, TranscriptSource } from './capture/transcriptSource';
export { GraphqlTranscriptSource } from './capture/graphqlTranscriptSource';
export { RunCaptureConsumer, runSessionKey, workflowAgent } from './capture/runCaptureConsumer';
export { ChatCaptureConsumer, chatSessionKey, chatAgent } from './capture/chatCaptureConsumer';
export type { RunCaptureConsumerOptions } from './capture/runCaptureConsumer';
export { GraphqlRunTurnSource } from './capture/runTurnSource';
export type { CapturedRun, CapturedRunNode, RunTurnSource } from './capture/runTurnSource';
export { EmbeddingsClient, embeddingsEndpoint, toVectorLiteral } from './search/embeddings';
export { countTokens, truncateToTokens, TOKENIZER } from './context/tokenizer';
export { snippet } from './search/snippet';

export const memoryEntities = [Conversation, MemoryMessage, MemorySummary];
export const memoryMigrations = [MemoryTables1764460800500, MemoryCursorsToPlatform1764460800510, MemoryMessageAgent1764460800520];

export interface CaptureOptions {
  /** Where transcript bodies come from (the sessions subgraph). */
  source: TranscriptSource;
  /** Where prompt-node turns come from (the runs subgraph); without it runs are not captured. */
  runs?: RunTurnSource;
  /** Follow the streams from boot. Tests pass false and drive `catchUp()`. @default true */
  autoStart?: boolean;
  /** The harness consumer's cursor name. @default memory-capture */
  name?: string;
  /** The runs consumer's cursor name. @default memory-run-capture */
  runsName?: string;
  /** Events per transaction. @default 50 */
  batchSize?: number;
}

export interface StartMemoryOptions extends SubgraphStartOptions {
  settings: MemorySettings;
  /** Capture from the `harness` (and `runs`) stream; without it no consumer runs. */
  capture?: CaptureOptions;
  /** How often the search mode is compared for capabilitiesChanged. @default 10000 */
  capabilityPollMs?: number;
}

export interface RunningMemory {
  url: string;
  wsUrl: string;
  /** The domain services, for in-process callers and tests. */
  services: MemoryServices;
  /** SQL statements sent so far (tests and benchmarks read it around a request). */
  queryCount(): number;
  stop(): Promise<void>;
}

/** The capture consumers `opts.capture` asks for (none without it), each reporting its commits to `committed`. */
function captureConsumers(
  opts: StartMemoryOptions,
  state: DomainState,
  memory: MemoryService,
  committed: () => void,
): { capture?: CaptureConsumer; runCapture?: RunCaptureConsumer; chatCapture?: ChatCaptureConsumer } {
  if (!opts.capture) return {};
  const { dataSource, events, notifier } = state;
  const capture = new CaptureConsumer({
    dataSource,
    events,
    notifier,
    memory,
    source: opts.capture.source,
    log: opts.log,
    name: opts.capture.name,
    batchSize: opts.capture.batchSize,
    onCommitted: committed,
  });
  // Chat messages carry their text: nothing to fetch, so chats are captured wherever capture runs.
  const chatCapture = new ChatCaptureConsumer({ dataSource, events, notifier, memory, log: opts.log, batchSize: opts.capture.batchSize, onCommitted: committed });
  if (!opts.capture.runs) return { capture, chatCapture };
  const runCapture = new RunCaptureConsumer({
    dataSource,
    events,
    notifier,
    memory,
    source: opts.capture.runs,
    log: opts.log,
    name: opts.capture.runsName,
    batchSize: opts.capture.batchSize,
    onCommitted: committed,
  });
  return { capture, runCapture, chatCapture };
}

/** capabilitiesChanged: the search mode as memorySearchMode answers it, compared here. Not started. */
function searchModeWatcher(opts: StartMemoryOptions, state: DomainState, mode: SearchModeState): CapabilityWatcher {
  return singleCapabilityWatcher({
    dataSource: state.dataSource,
    events: state.events,
    source: 'MEMORY_SEARCH',
    id: 'search',
    intervalMs: opts.capabilityPollMs,
    log: opts.log,
    observe: async () => {
      const now = mode.current;
      return { available: now.mode === 'HYBRID', state: { mode: now.mode }, reason: now.reason };
    },
  });
}

/** Boots the memory subgraph: migrate, decide the search mode, start capture if given a source, then serve. */
export async function startMemorySubgraph(opts: StartMemoryOptions): Promise<RunningMemory> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: memoryEntities,
    migrations: memoryMigrations,
    migrationsTableName: 'memory_migrations',
    log: opts.log,
    pg: opts.security.pg,
    listenerName: 'keelson-memory-listener',
  });
  const { dataSource, queries, events } = state;
  let capture: CaptureConsumer | undefined;
  let runCapture: RunCaptureConsumer | undefined;
  let chatCapture: ChatCaptureConsumer | undefined;
  let indexer: VectorIndexer | undefined;
  let watcher: CapabilityWatcher | undefined;
  const teardown = async () => {
    await watcher?.stop();
    await capture?.stop();
    await runCapture?.stop();
    await chatCapture?.stop();
    await indexer?.stop();
    await state.close();
  };
  try {
    const deps = { dataSource, events, settings: opts.settings, log: opts.log };
    const mode = new SearchModeState(await detectSearchMode(dataSource, opts.settings, opts.log), opts.settings.embeddings?.timeoutMs);
    opts.log.info({ mode: mode.current.mode, reason: mode.current.reason }, 'memory search mode');
    // HYBRID mode: what is committed gets its vector right after (see VectorIndexer).
    if (mode.store && opts.settings.embeddings) {
      indexer = new VectorIndexer(dataSource, new EmbeddingsClient(opts.settings.embeddings), mode.store, opts.log, mode);
      indexer.kick();
    }
    const committed = () => indexer?.kick();
    const memory = new MemoryService(deps, committed);
    const history = new HistoryService(deps);
    const search = new SearchService(deps, mode, committed);
    ({ capture, runCapture, chatCapture } = captureConsumers(opts, state, memory, committed));
    const services: MemoryServices = {
      memory,
      history,
      summaries: new SummaryService(deps, committed),
      search,
      context: new ContextService(search, history),
      events,
      get mode() {
        return mode.current;
      },
      indexer,
      capture,
      runCapture,
      chatCapture,
    };
    watcher = searchModeWatcher(opts, state, mode);
    const { schema } = await buildMemorySchema();
    const served = await serveDomain('memory', { ...opts, audit: new AuditLog(dataSource, opts.log, 'memory') }, schema, services, teardown);
    watcher.start();
    if (opts.capture?.autoStart !== false) {
      await capture?.start();
      await runCapture?.start();
      await chatCapture?.start();
    }
    return { url: served.url, wsUrl: served.wsUrl, services, queryCount: () => queries.count, stop: served.stop };
  } catch (err) {
    await teardown();
    throw err;
  }
}
