import type { PrivateHostsAllowance, EventLog, ProcessSandbox } from '@keelson/platform';
import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';

/** What the projects domain needs from its environment (resolved once by config.ts). */
export interface ProjectsSettings {
  /** Root of projects created without a rootPath (KEELSON_WORKSPACE). */
  workspaceRoot: string;
  /** The mesh's own state folder (KEELSON_HOME): managed worktrees live under `<home>/worktrees`. */
  keelsonHome: string;
  /** The home `~` expands to. */
  userHome: string;
  /** Environment git runs with (identity, GIT_CONFIG_GLOBAL, CA bundle, …); the git runner scrubs it. */
  gitEnv: NodeJS.ProcessEnv;
  /** @default 60000 */
  cloneTimeoutMs: number;
  /**
   * Non-public hosts a clone may reach (KEELSON_GIT_ALLOW_PRIVATE_HOSTS): `true` for any, else the
   * allowed host names / IP literals. @default [] (public hosts only)
   */
  allowPrivateHosts: PrivateHostsAllowance;
  /**
   * Bound of a workspace's prepare step (KEELSON_WORKSPACE_PREPARE_TIMEOUT_MS).
   * @default 600000
   */
  prepareTimeoutMs: number;
  /**
   * The sandbox a workspace's prepare step runs in (it runs the repository's own install scripts):
   * only the worktree and the project's prepare cache writable, with network.
   * @default createSandbox({ mode: KEELSON_SANDBOX, hidden: [keelsonHome] })
   */
  sandbox: ProcessSandbox;
  /** KEELSON_DISABLE_MUTATION_LOCK: the emergency operator bypass. */
  disableMutationLock: boolean;
}

export interface ProjectsDeps {
  dataSource: DataSource;
  events: EventLog;
  settings: ProjectsSettings;
  log: Logger;
}
