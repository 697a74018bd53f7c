// @keelson/ribs-contract: the Rib contract. A rib author imports only this package.
export {
  RIB_ID_PATTERN,
  ribIdSchema,
  ribDisplayNameSchema,
  RIB_PACKAGE_PREFIX,
  ribPackageName,
  ribNamespace,
  isInRibNamespace,
  ribIdFromKey,
} from './ribId';
export type { RibExec, RibExecOptions, RibExecResult } from './exec';
export { canvasKindSchema, canvasToneSchema } from './canvas';
export type { CanvasKind, CanvasTone } from './canvas';
export { ribViewDescriptorSchema } from './views';
export type { RibViewDescriptor } from './views';
export {
  MIN_REGION_CADENCE_MS,
  IDLE_CADENCE_FACTOR,
  workflowArgsSchema,
  regionGlyphSchema,
  ribBoardActionSchema,
  headActionSchema,
  surfaceRegionSchema,
  bannerRegionSchema,
  surfaceColumnSchema,
  surfaceRowSchema,
  surfaceLayoutSchema,
  surfaceIdSchema,
  ribSurfaceDescriptorSchema,
  SELECT_PROJECT_ACTION,
  surfaceTabId,
  columnRegions,
  layoutRegions,
  effectiveCadenceMs,
} from './surfaces';
export type {
  RegionGlyph,
  RibBoardAction,
  HeadAction,
  RibSurfaceRegion,
  RibBannerRegion,
  RibSurfaceColumn,
  RibSurfaceRow,
  RibSurfaceLayout,
  RibSurfaceDescriptor,
  RegionSlot,
} from './surfaces';
export {
  ribActionOriginSchema,
  ribActionSchema,
  ribActionResultSchema,
  INGEST_ACTION_TYPE,
  RIB_INGEST_TEXT_MAX,
  ribIngestPayloadSchema,
} from './actions';
export type { RibActionOrigin, RibAction, RibActionResult, RibIngestPayload } from './actions';
export { openChatSeedSchema, agentSummarySchema } from './agents';
export type { OpenChatSeed, AgentSummary } from './agents';
export { canvasPlacementSchema, surfaceTabIdSchema, ribClientEffectSchema, RIB_CLIENT_EFFECTS, CANVAS_REPLY_EFFECTS } from './effects';
export type { CanvasPlacement, RibClientEffect, RibClientEffectName } from './effects';
export { ribCommandDescriptorSchema, commandEffectSchema, commandInvokeResultSchema, commandCompletionSchema } from './commands';
export type { RibCommandDescriptor, CommandEffect, CommandInvokeResult, CommandCompletion } from './commands';
export { ribAuthStatusSchema } from './auth';
export type { RibAuthStatus } from './auth';
export type { StopReason, MessageChunk, ToolResultChunk } from './chunks';
export { toolNameSchema, OTHER_TOOL_FAMILY, toolFamily } from './tools';
export type { ToolContext, ToolDefinition, RegisteredToolInfo, ToolCaller } from './tools';
export { toolReachabilityStatusSchema, crossRibGrantsSchema, GRANT_ALL_TOOLS } from './crossRib';
export type {
  CallToolOptions,
  CallToolFailureReason,
  CallToolResult,
  ToolReachabilityStatus,
  ToolReachability,
  CrossRibGrantsMap,
} from './crossRib';
export { policyDecisionSchema } from './policy';
export type {
  PolicySurface,
  PolicyPhase,
  PolicyEvent,
  PolicyDecision,
  PolicyContext,
  Policy,
  RibApprovalDecision,
  ApprovalRequest,
  ApprovalNotice,
  ApprovalObserver,
} from './policy';
export { ribDocsSourceSchema } from './docs';
export type { RibDocsSource } from './docs';
export type { SnapshotComposer, SnapshotValidator, SnapshotRegisterOptions, SnapshotFrame, SnapshotManager } from './snapshots';
export type { RibWorkflowContribution, RibWorkflowRunResult, RunWorkflowOptions, StartWorkflowOptions } from './workflows';
export { RESPOND_TO_RUN_MAX_BYTES, RUN_ARTIFACT_LIMITS } from './runs';
export type {
  RibRunState,
  RunArtifact,
  RibPendingApproval,
  RunCheckout,
  RunNodeView,
  RibRunStatus,
  RibRunEvent,
  CancelRunResult,
  RespondToRunResult,
} from './runs';
export type { RegisterOpRequest, OpProgress, OpHandle } from './ops';
export type { RibModelClass, RibReasoningEffort, RibAgentTurnRequest, TokenUsage, RibAgentTurnResult, RibAgentTurn } from './agentTurn';
export {
  projectSchema,
  projectWorkspaceSchema,
  projectLockSchema,
  projectNameSchema,
  createProjectBodySchema,
  cloneProjectBodySchema,
  ProjectOperationError,
  isProjectOperationError,
} from './projects';
export type {
  Project,
  ProjectWorkspace,
  ProjectLock,
  CreateProjectBody,
  CloneProjectBody,
  ProjectOperationStatus,
  AcquireWorkspaceRequest,
  WorkspaceBaseName,
  WorkspaceLease,
  WorkspaceLeaseRecord,
  AcquireMutationLockRequest,
  MutationLock,
  MutationLockRecord,
} from './projects';
export type { MemoryScope, MemoryRecord, MemoryTools } from './memory';
export type { RibProviderInfo } from './providers';
export type { RibContext } from './context';
export { RIB_HOOK_NAMES } from './rib';
export type { Rib, RibHookName } from './rib';
export type { RibSummary, ListRibsResponse, AgentRef, CommandRef, RibActionResponse, ListAgentsResponse } from './wire';
