export { canonicalPath, isInside, SymlinkLoopError } from './canonicalPath';
export { checkPath, confinePath, ConfinementError, protectedDirOf, PROTECTED_DIR_NAMES, type ConfineOptions, type ConfinementReason, type PathAccess } from './confinePath';
export { openConfinedForRead, openConfinedForWrite, READ_FLAGS, WRITE_FLAGS } from './openConfined';
