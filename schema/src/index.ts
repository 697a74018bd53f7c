export { errorCodes, errorCodeSchema, requestErrorCodes, statusOf, codeForStatus, MeshError, isMeshError, isUnavailableError, UNAVAILABLE_MESSAGE } from './errors';
export type { ErrorCode, RequestErrorCode } from './errors';
export {
  envSchema,
  parseEnv,
  ConfigError,
  expandHome,
  keelsonHome,
  keelsonWorkspace,
  isLoopback,
  listOf,
  WORKSPACE_ACQUIRE_TIMEOUT_MS,
  WORKSPACE_PREPARE_MAX_MS,
} from './config';
export type { MeshEnv, TemporalTarget } from './config';
export { describeZodError } from './zodMessage';
export {
  streams,
  EVENTS_CHANNEL,
  cursorSchema,
  encodeCursor,
  decodeCursor,
  projectEventTypes,
  SNAPSHOT_PUBLISHED,
  manifestInvalidationReasons,
  harnessCaptureEventTypes,
  sessionCreatedPayloadSchema,
  transcriptAppendedPayloadSchema,
  sessionUpdatedPayloadSchema,
  harnessOfSessionId,
} from './events';
export type {
  StreamName,
  EventEnvelope,
  ProjectEventType,
  SnapshotEventPayload,
  ManifestInvalidationReason,
  HarnessCaptureEventType,
  SessionCreatedPayload,
  TranscriptAppendedPayload,
  SessionUpdatedPayload,
} from './events';
export { TASK_QUEUE, workflowTypes, workflowKinds, searchAttributes } from './temporal';
export type { SearchAttributeName } from './temporal';
export { isUuid, UUID_PATTERN } from './ids';
export {
  runStatuses,
  terminalRunStatuses,
  isTerminalRunStatus,
  runNodeStatuses,
  finalNodeStatuses,
  runEventTypes,
  opFrameTypes,
  runLimits,
  runMessages,
  opMessages,
  NODE_STEER_MAX_CHARS,
} from './runs';
export type {
  RunStatus,
  RunNodeStatus,
  RunEventType,
  RunEventPayload,
  OpFrameType,
  OpFramePayload,
  RespondInput,
  RespondResult,
  DagRunStatus,
  DurableOpStatus,
  OpSteerResult,
  OpWorkOutcome,
  NodeSteerArgs,
} from './runs';
export {
  workflowDefinitionSchema,
  workflowNameSchema,
  nodeIdSchema,
  whenSchema,
  parseWorkflowDefinition,
  parseDuration,
  planOf,
  findCycle,
  ancestorsOf,
  conditionHolds,
  isApproval,
  utf8Bytes,
  modelClasses,
  reasoningEfforts,
  workflowNodeTypes,
  scriptRuntimes,
  workflowLimits,
  WHEN_VALUE_CHARS,
} from './workflowDefinition';
export type {
  WorkflowDefinition,
  WorkflowNode,
  WorkflowInputSpec,
  WorkflowNodeType,
  NodeCondition,
  PlanNode,
  DefinitionParse,
  ModelClass,
  ReasoningEffort,
  ScriptRuntime,
} from './workflowDefinition';
export { harnessEventTypes, turnStatuses, approvalDecisions, HARNESS_EVENT_TEXT_LIMIT, steerStatuses, sessionSteerLimits, sessionSteerMessages } from './harness';
export type {
  HarnessEventType,
  TurnStatus,
  ApprovalDecision,
  HarnessEventBase,
  HarnessEventPayloads,
  HarnessEventPayload,
  HarnessTaskInput,
  HarnessTaskResult,
  SteerStatus,
  SessionSteerInput,
  SessionSteerItem,
  SessionSteerAnswer,
  SessionSteerState,
  SessionSteerTurnResult,
} from './harness';
export { refreshMessages, HOLDER_STOPPED, POLICY_APPROVAL_WORKFLOW, POLICY_APPROVAL_NODE } from './ribRuns';
export type { RefreshAttach, RefreshLive, RefreshDetach, RegionRefreshStatus, RefreshOutcome } from './ribRuns';
export { scopes, scopeSchema, callerKinds, callerSchema, actorOf, callerKey, effectiveScopes, satisfiesScopes, ASSERTION_HEADER, ASSERTION_PARAM, MCP_PATH, UPLOADS_PATH, closeCodes } from './auth';
export type { Scope, CallerKind, Caller, Actor } from './auth';
export * from './swarm';
export * from './chat';
export { approvalKinds, approvalStatuses, approvalEventTypes, capabilitySources, CAPABILITY_CHANGED } from './operator';
export type { ApprovalKind, ApprovalStatus, ApprovalEventType, ApprovalEventPayload, CapabilitySource, CapabilityChangePayload } from './operator';
export { parseInput, pageArgsSchema, pageOf } from './input';
export type { PageArgs, PageInfoShape } from './input';
