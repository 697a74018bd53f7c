export { bwrapArgv, type SandboxSpec } from './bwrapArgv';
export {
  createSandbox,
  findBwrap,
  gitDirsOf,
  MESH_INSTALL_ROOT,
  probeBwrap,
  GIT_CONTROL_ENTRIES,
  gitControlEntries,
  placeholdersFor,
  protectedEntries,
  SANDBOX_FIX,
  SANDBOX_MODES,
  SandboxUnavailableError,
  type BwrapProbe,
  type ProcessSandbox,
  type SandboxedCommand,
  type SandboxMode,
  type SandboxOptions,
  type SandboxRequest,
} from './sandbox';
export { isSecretName, SANDBOX_ENV_ALLOWED, sandboxEnv } from './sandboxEnv';
export { seccompFilter, seccompFilterFile, withSeccompFilter, type SeccompOptions } from './seccompFilter';
