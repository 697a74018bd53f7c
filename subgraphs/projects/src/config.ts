import { subgraphServiceConfig, type SubgraphServiceConfig } from '@keelson/kit';
import { homedir } from 'node:os';
import { createSandbox } from '@keelson/platform';
import { keelsonHome, keelsonWorkspace, parseEnv } from '@keelson/schema';
import type { ProjectsSettings } from './settings';

export interface ProjectsConfig extends SubgraphServiceConfig {
  settings: ProjectsSettings;
}

/** The one place the projects subgraph reads process.env. */
export function loadProjectsConfig(env: NodeJS.ProcessEnv = process.env): ProjectsConfig {
  const e = parseEnv(env);
  const userHome = homedir();
  return {
    ...subgraphServiceConfig(e, e.KEELSON_PROJECTS_PORT),
    settings: projectsSettings(e, userHome, env),
  };
}

/** Resolves the projects domain's settings from parsed env. */
export function projectsSettings(
  e: ReturnType<typeof parseEnv>,
  userHome: string,
  gitEnv: NodeJS.ProcessEnv,
): ProjectsSettings {
  const home = keelsonHome(e, userHome);
  return {
    workspaceRoot: keelsonWorkspace(e, userHome),
    keelsonHome: home,
    userHome,
    gitEnv,
    cloneTimeoutMs: e.KEELSON_CLONE_TIMEOUT_MS,
    prepareTimeoutMs: e.KEELSON_WORKSPACE_PREPARE_TIMEOUT_MS,
    sandbox: createSandbox({ mode: e.KEELSON_SANDBOX, hidden: [home] }),
    allowPrivateHosts: e.KEELSON_GIT_ALLOW_PRIVATE_HOSTS,
    disableMutationLock: e.KEELSON_DISABLE_MUTATION_LOCK,
  };
}
