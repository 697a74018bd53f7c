// @keelson/platform: what every domain stands on. Each module is re-exported by name below.
export {
  canonicalPath,
  checkPath,
  confinePath,
  ConfinementError,
  isInside,
  protectedDirOf,
  PROTECTED_DIR_NAMES,
  SymlinkLoopError,
  type ConfineOptions,
  type ConfinementReason,
  type PathAccess,
} from './confine';
export {
  listProcesses,
  findOwnedProcesses,
  ownsProcess,
  carriesRun,
  processArgv,
  isAlive,
  signalGroup,
  endProcessGroup,
  processStartTicks,
  setSupervisorOwner,
  supervisorName,
  findOrphanGroups,
  endOrphanGroups,
} from './process/ownedProcesses';
export type { ProcessInfo, OrphanGroup } from './process/ownedProcesses';
export { isExecutable, findExecutable } from './process/executables';
export {
  bwrapArgv,
  createSandbox,
  findBwrap,
  gitDirsOf,
  isSecretName,
  probeBwrap,
  protectedEntries,
  SANDBOX_ENV_ALLOWED,
  SANDBOX_FIX,
  SANDBOX_MODES,
  sandboxEnv,
  SandboxUnavailableError,
  type BwrapProbe,
  type ProcessSandbox,
  type SandboxedCommand,
  type SandboxMode,
  type SandboxOptions,
  type SandboxRequest,
  type SandboxSpec,
} from './sandbox';

// The hardened git runner (every git process the mesh starts) and the clone-URL rules.
export {
  runGit,
  gitInvocation,
  isGitCommand,
  GitError,
  GIT_PROTOCOLS,
  DEFAULT_SSH_COMMAND,
  KEPT_GIT_ENV,
  hardenedGitEnv,
  hardenedGitArgs,
  pinnedConfig,
  splitGlobalOptions,
  mayRunDrivers,
  driverPins,
  parseCloneUrl,
  checkCloneHost,
  curlResolvePin,
  redactUrl,
  isPrivateAddress,
  looseIPv4,
} from './git';
export type {
  GitResult,
  GitInvocation,
  GitInvocationOptions,
  RunGitOptions,
  GitHardeningOptions,
  GitCredentials,
  CloneUrl,
  PrivateHostsAllowance,
  HostLookup,
} from './git';
export { createDataSource, initializeAndMigrate, QueryCounter } from './data/dataSource';
export type { DataSourceOptions, MeshDataSource } from './data/dataSource';
export { openDomainState } from './data/domainState';
export type { DomainState, DomainStateOptions } from './data/domainState';
export { EventLog } from './eventLog/eventLog';
export type { NewEvent, ReadOptions } from './eventLog/eventLog';
export { EventNotifier } from './eventLog/notifier';
export { followStream } from './eventLog/followStream';
export type { StreamReader } from './eventLog/followStream';
export type { Ticket, NotifierOptions } from './eventLog/notifier';
export { platformMigrations } from './eventLog/eventLog.migration';
export { DurableConsumer } from './eventLog/durableConsumer';
export type { DurableConsumerOptions } from './eventLog/durableConsumer';
export { IdempotencyKeys, IDEMPOTENCY_KEY, idempotencyKeySchema, inputHash, byId, whole } from './idempotency/idempotency';
export type { IdempotencyOptions, IdempotentCall, ResultCodec } from './idempotency/idempotency';
