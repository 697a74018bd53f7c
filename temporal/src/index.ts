export { TEMPORAL_CLI_VERSION, findTemporalCli, ensureTemporalCli, startDevServer } from './devServer';
export type { DevServer, DevServerOptions, LogLine, TemporalCliOptions } from './devServer';
export { createActivities, builtinOps, countdownOp } from './activities';
export type {
  Activities,
  ActivityDeps,
  EchoInput,
  EchoOutput,
  RunActivityDeps,
  OpActivityDeps,
  OpContext,
  OpImplementation,
  OpRegistry,
  PromptNodeExecutor,
  PromptNodeRequest,
  PromptNodeResult,
  RunArtifact,
} from './activities';
export { startWorker } from './worker';
export type { RunningWorker, StartWorkerOptions } from './worker';
export { workflowBundle, workflowsPath } from './workflowBundle';
export { connectClient, workflowUiUrl, startEcho } from './client';
export type { ConnectClientOptions, StartEchoOptions } from './client';
export { runWorkflowId, opWorkflowId, startRunWorkflow, startOpWorkflow } from './runClient';
export type { StartRunOptions, StartOpOptions } from './runClient';
export { respondUpdate, runStatusQuery, steerSignal, opSteerUpdate, opStatusQuery } from './workflows/messages';
export { STEER_KEY_PREFIX } from './workflows/steerableOp';
export { sessionSteerUpdate, sessionSteerStatusQuery, sessionSteerWorkflowId } from './workflows/sessionSteerMessages';
export type { DagRunInput, DagRunResult, CarriedDagState, DurableOpInput, DurableOpResult } from './workflows';
export { searchAttributeKeys } from './searchAttributeKeys';
export { ensureNamespaceAndSearchAttributes } from './namespaceSetup';
export type { NamespaceSetupOptions } from './namespaceSetup';
export { configureTemporalRuntime, runtimeLogFunction } from './runtime';
export type { RuntimeLogSink } from './runtime';
export { openActivityDeps } from './workerDeps';
export type { ActivityDepsOptions, OpenedActivityDeps } from './workerDeps';
export { artifactPaths, readArtifacts } from './activities/runs/artifacts';
export { createRibActivities } from './activities/ribs/ribActivities';
export type { RibActivities, RibActivityDeps, HeldOp, HeldOpOutcome, RefreshRegionInput } from './activities/ribs/ribActivities';
export { ribHolderTaskQueue, refreshWorkflowId, startRibOpWorkflow, attachRegionRefresh, signalRegionLive, detachRegionRefresh, startRibWorker } from './ribClient';
export type { StartRibOpOptions, AttachRefreshOptions, RibWorkerOptions, RunningRibWorker } from './ribClient';
export { refreshAttachSignal, refreshLiveSignal, refreshDetachSignal, refreshStatusQuery } from './workflows/ribMessages';
export type { RibOpInput, RibOpResult, RegionRefreshInput, RegionRefreshResult } from './workflows';
export { createWorkerRibHost, lazyWorkerRibHost } from './ribHostForWorker';
export type { WorkerRibHostOptions, LazyWorkerRibHost } from './ribHostForWorker';
export { createPromptNodeExecutor } from './activities/prompt/promptNodeExecutor';
export { openPromptExecutor } from './activities/prompt/openPromptExecutor';
export type { PromptExecutorOptions, OpenedPromptExecutor } from './activities/prompt/openPromptExecutor';
export { ensureCompactionSchedule, deleteCompactionSchedule, compactionScheduleId } from './compactionSchedule';
export type { CompactionScheduleOptions } from './compactionSchedule';
export { openMemoryActivityDeps } from './memoryDeps';
export { loadStandaloneWorkerConfig, startStandaloneWorker } from './standaloneWorker';
export type { StandaloneWorkerConfig, StartStandaloneWorkerOptions, RunningStandaloneWorker } from './standaloneWorker';
export type { MemoryActivityDepsOptions } from './memoryDeps';
export { memoryGraphqlApi } from './activities/memory/memoryApi';
export { createMemoryActivities } from './activities/memory/memoryActivities';
export { summaryPrompt, SUMMARY_INSTRUCTION } from './activities/memory/summaryPrompt';
export type { MemoryCompactionInput, MemoryCompactionResult } from './workflows/memoryCompaction';
export type { MemoryActivityDeps, MemoryApi, CompactionRange, RangeContent, SummaryModelChoice, SummarizeRangeResult } from './activities';
export { temporalSwarmsExecutor, swarmWorkflowId, steerSwarmWorkflow } from './swarmsExecutor';
export { temporalChatsExecutor, chatWorkflowId } from './chatsExecutor';
export type { ChatsExecutorTuning } from './chatsExecutor';
export { swarmBusEventSignal, swarmLocalMessageSignal, swarmSteerUpdate, swarmStopSignal, swarmStatusQuery } from './workflows/swarmMessages';
export type { SwarmLiveStatus } from './workflows/swarmMessages';
export type { SwarmWorkflowInput, SwarmWorkflowResult, CarriedSwarmState } from './workflows';
export { createSwarmActivities, tokenNonce } from './activities';
export type { SwarmActivityDeps, SwarmActivities, SwarmTurnInput, SwarmTurnResult } from './activities';
export { openSwarmActivityDeps, openWorkerSwarmDeps } from './swarmDeps';
export type { SwarmActivityDepsOptions, OpenedSwarmActivityDeps } from './swarmDeps';
export { temporalRunsExecutor, connectRunsExecutor } from './runsExecutor';
