export {
  HARNESS_IDS,
  BARE_UUID_PROBE_ORDER,
  nativeIdShapes,
  isHarnessId,
  requireHarnessId,
  parseSessionId,
  requireSessionId,
  isNativeIdOf,
  formatSessionId,
  encSessionId,
  decodeEnc,
  classifySessionRef,
} from './ids';
export type { HarnessId, SessionId, ParsedSessionId, SessionRef } from './ids';
export { capabilityNames } from './contract';
export type {
  HarnessCapabilities,
  CapabilityName,
  CapabilityReport,
  TaskExecutorInfo,
  SessionSummary,
  TranscriptEntry,
  StartSessionOpts,
  UserTurn,
  DriverEvent,
  HarnessEvent,
  HarnessDriver,
} from './contract';
export { harnessSettings } from './settings';
export type { HarnessSettings } from './settings';
export { confinedPath, realpathDeep, within } from './confine';
export { startGroupProcess, groupAlive, killGroup } from './process/groupProcess';
export type { GroupProcess, GroupProcessSpec, GroupExit } from './process/groupProcess';
export { CliDriver } from './drivers/cliDriver';
export type { TurnSpec, TurnCommand, TurnResult, OutputMapper, MappedOutput, DriverFeatures } from './drivers/cliDriver';
export { ClaudeCodeDriver, PERMISSION_SERVER, PERMISSION_TOOL } from './drivers/claudeCode';
export { CodexDriver, CodexMapper } from './drivers/codex';
export { QwenCodeDriver } from './drivers/qwenCode';
export { PiDriver, PiMapper } from './drivers/pi';
export { OpencodeDriver, OpencodeMapper } from './drivers/opencode';
export { StreamJsonMapper } from './drivers/streamJson';
export { UnavailableDriver } from './drivers/unavailable';
export { createDriverRegistry } from './registry';
export type { DriverRegistry } from './registry';
export { HarnessControlPlane } from './plane/controlPlane';
export type { ControlPlaneOptions } from './plane/controlPlane';
export { summaryOf } from './plane/sessions';
export { Uploads, UploadTooLarge, uploadOwner } from './plane/uploads';
export { PermissionGate, LIVE_APPROVAL_PREFIX } from './plane/permissions';
export type { PermissionAsk, PermissionAnswer } from './plane/permissions';
export type { UploadRecord } from './plane/uploads';
export type { SessionView } from './plane/sessions';
export type { TurnAccepted, TurnOutcome, TurnControl } from './plane/turn';
export { toHarnessEvent } from './plane/events';
export { HarnessStore, HOST } from './plane/store';
export type { SessionRecord, TaskRecord, HarnessApprovalRecord, HarnessPromptRecord, NewSession } from './plane/store';
export { answerText } from './plane/prompts';
export { followHarnessEvents } from './plane/tail';
export type { HarnessEventTail, HarnessTailFilter } from './plane/tail';
export { harnessProjectsGraphqlApi } from './plane/projects';
export type { HarnessProjectsApi, ProjectInfo } from './plane/projects';
export { SessionsTables1764460800400 } from './plane/sessionsTables.migration';
export { startHarnessRuntime, sessionsMigrations, SESSIONS_MIGRATIONS_TABLE } from './runtime';
export type { HarnessRuntime, HarnessRuntimeOptions } from './runtime';
