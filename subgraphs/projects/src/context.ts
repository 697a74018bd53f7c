import type { EventLog, IdempotencyKeys } from '@keelson/platform';
import { byKeys, groupByKeys, type SubgraphContext } from '@keelson/kit';
import { readGitState, type GitState } from './git/gitState';
import type { MutationLock } from './lock/lock.entity';
import type { LockService } from './lock/lock.service';
import type { Project } from './project/project.entity';
import type { ProjectService } from './project/project.service';
import type { ProjectsSettings } from './settings';
import type { WorkspaceLease } from './workspace/workspace.entity';
import type { WorkspaceService } from './workspace/workspace.service';

export interface ProjectsServices {
  projects: ProjectService;
  workspaces: WorkspaceService;
  locks: LockService;
  events: EventLog;
  /** The create mutations' idempotency keys. */
  idempotency: IdempotencyKeys;
  settings: ProjectsSettings;
}

export interface ProjectsContext extends SubgraphContext {
  services: ProjectsServices;
}

/** The per-request loaders of this subgraph; every field and reference resolver goes through them. */
export function projectsLoaders(ctx: ProjectsContext) {
  return ctx.loaders.setOf(makeProjectsLoaders, ctx);
}

function makeProjectsLoaders(ctx: ProjectsContext) {
  const { loaders, services } = ctx;
  return {
    project: loaders.get<string, Project | null>('project', async (ids) =>
      byKeys(ids, await services.projects.byIds(ids), (p) => p.id),
    ),
    lease: loaders.get<string, WorkspaceLease | null>('lease', async (ids) =>
      byKeys(ids, await services.workspaces.byIds(ids), (l) => l.id),
    ),
    leasesOfProject: loaders.get<string, WorkspaceLease[]>('leasesOfProject', async (ids) =>
      groupByKeys(ids, await services.workspaces.liveFor(ids), (l) => l.projectId),
    ),
    lockOfProject: loaders.get<string, MutationLock | null>('lockOfProject', async (ids) =>
      byKeys(ids, await services.locks.currentFor(ids), (l) => l.projectId),
    ),
    gitState: loaders.get<string, GitState>('gitState', (roots) =>
      Promise.all(roots.map((root) => readGitState(root, services.settings.gitEnv))),
    ),
  };
}
