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
export { listProcesses, findOwnedProcesses, isAlive, endProcessGroup } from './process/ownedProcesses';
export type { ProcessInfo } from './process/ownedProcesses';
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
