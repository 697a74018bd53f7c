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
