export { runGit, gitInvocation, isGitCommand, GitError } from './runGit';
export type { GitResult, GitInvocation, GitInvocationOptions, RunGitOptions } from './runGit';
export {
  GIT_PROTOCOLS,
  DEFAULT_SSH_COMMAND,
  KEPT_GIT_ENV,
  hardenedGitEnv,
  hardenedGitArgs,
  pinnedConfig,
  splitGlobalOptions,
  mayRunDrivers,
  driverPins,
} from './gitHardening';
export type { GitHardeningOptions, GitCredentials } from './gitHardening';
export { parseCloneUrl, checkCloneHost, curlResolvePin, redactUrl } from './cloneUrl';
export type { CloneUrl, PrivateHostsAllowance, HostLookup } from './cloneUrl';
export { isPrivateAddress, looseIPv4 } from './privateAddress';
