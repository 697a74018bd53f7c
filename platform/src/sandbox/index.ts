export { bwrapArgv, type SandboxSpec } from './bwrapArgv';
export {
  createSandbox,
  findBwrap,
  gitDirsOf,
  MESH_INSTALL_ROOT,
  probeBwrap,
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
