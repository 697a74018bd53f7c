import { ProjectTrustDigest1764460800300 } from './migrations/1764460800300-ProjectTrustDigest';
import { IdempotencyKeys, openDomainState, AuditLog } from '@keelson/platform';
import { serveDomain, type SubgraphStartOptions } from '@keelson/kit';
import type { ProjectsServices } from './context';
import { MutationLock } from './lock/lock.entity';
import { LockService } from './lock/lock.service';
import { ProjectsTables1764460800100 } from './migrations/1764460800100-ProjectsTables';
import { ProjectTrust1764460800200 } from './migrations/1764460800200-ProjectTrust';
import { WorkspacePrepare1764460800720 } from './migrations/1764460800720-WorkspacePrepare';
import { Project } from './project/project.entity';
import { ProjectService } from './project/project.service';
import { buildProjectsSchema } from './schema';
import type { ProjectsSettings } from './settings';
import { WorkspaceLease } from './workspace/workspace.entity';
import { WorkspaceService } from './workspace/workspace.service';

export { buildProjectsSchema } from './schema';
export { loadProjectsConfig, projectsSettings } from './config';
export type { ProjectsConfig } from './config';
export type { ProjectsSettings } from './settings';
export type { ProjectsServices } from './context';
export { Project } from './project/project.entity';
export { deriveProjectName } from './project/project.service';

export const projectsEntities = [Project, WorkspaceLease, MutationLock];
export const projectsMigrations = [ProjectsTables1764460800100, ProjectTrust1764460800200, ProjectTrustDigest1764460800300, WorkspacePrepare1764460800720];

export interface StartProjectsOptions extends SubgraphStartOptions {
  settings: ProjectsSettings;
}

export interface RunningProjects {
  url: string;
  wsUrl: string;
  /** The domain services, for in-process callers (the rib host's project seams) and tests. */
  services: ProjectsServices;
  /** SQL statements sent so far (benchmarks read it around a request). */
  queryCount(): number;
  stop(): Promise<void>;
}

/** Boots the projects subgraph: migrate, then serve. */
export async function startProjectsSubgraph(opts: StartProjectsOptions): Promise<RunningProjects> {
  const state = await openDomainState({
    url: opts.databaseUrl,
    entities: projectsEntities,
    migrations: projectsMigrations,
    migrationsTableName: 'projects_migrations',
    log: opts.log,
    pg: opts.security.pg,
  });
  try {
    const { dataSource, events } = state;
    const deps = { dataSource, events, settings: opts.settings, log: opts.log };
    const projects = new ProjectService(deps);
    const services: ProjectsServices = {
      projects,
      workspaces: new WorkspaceService(deps, projects),
      locks: new LockService(deps),
      events,
      idempotency: new IdempotencyKeys(dataSource),
      settings: opts.settings,
    };
    const { schema } = await buildProjectsSchema();
    const served = await serveDomain('projects', { ...opts, audit: new AuditLog(dataSource, opts.log, 'projects') }, schema, services, state.close);
    return { url: served.url, wsUrl: served.wsUrl, services, queryCount: () => state.queries.count, stop: served.stop };
  } catch (err) {
    await state.close();
    throw err;
  }
}
