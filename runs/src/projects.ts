import { serviceCaller, type ServiceIdentity } from '@keelson/service';

export interface ProjectRef {
  id: string;
  name: string;
  rootPath: string;
  /** Whether the project's own `.keelson/workflows` may run (setProjectTrust). */
  trusted: boolean;
}

export interface WorkspaceRef {
  id: string;
  path: string;
  branch: string;
}

/** What the runs domain needs of the projects subgraph: lookups and worktree leases. */
export interface ProjectsApi {
  /** The project, or null when it does not exist. */
  project(id: string): Promise<ProjectRef | null>;
  acquireWorkspace(projectId: string, purpose: string): Promise<WorkspaceRef>;
  releaseWorkspace(id: string): Promise<boolean>;
  /** The project's mutation lock (before changing its live checkout); a second holder is CONFLICT. */
  acquireMutationLock?(projectId: string, purpose: string, holder: string): Promise<{ id: string }>;
  releaseMutationLock?(id: string): Promise<boolean>;
}

/**
 * The projects subgraph over its GraphQL API (subgraphs never import each other). Its errors keep
 * their registry code; an unreachable subgraph is SERVICE_UNAVAILABLE.
 */
export function projectsGraphqlApi(url: string, opts: { timeoutMs?: number; identity: ServiceIdentity }): ProjectsApi {
  const call = serviceCaller('the projects subgraph', url, { timeoutMs: opts.timeoutMs ?? 30_000, identity: opts.identity });
  return {
    async project(id) {
      const data = await call<{ project: ProjectRef | null }>('query ($id: ID) { project(id: $id) { id name rootPath trusted } }', { id });
      return data.project;
    },
    async acquireWorkspace(projectId, purpose) {
      const data = await call<{ acquireWorkspace: WorkspaceRef }>(
        'mutation ($p: ID!, $purpose: String) { acquireWorkspace(projectId: $p, purpose: $purpose) { id path branch } }',
        { p: projectId, purpose },
      );
      return data.acquireWorkspace;
    },
    async releaseWorkspace(id) {
      const data = await call<{ releaseWorkspace: boolean }>('mutation ($id: ID!) { releaseWorkspace(id: $id) }', { id });
      return data.releaseWorkspace;
    },
    async acquireMutationLock(projectId, purpose, holder) {
      const data = await call<{ acquireMutationLock: { id: string } }>(
        'mutation ($p: ID!, $purpose: String!, $holder: String!) { acquireMutationLock(projectId: $p, purpose: $purpose, holder: $holder) { id } }',
        { p: projectId, purpose, holder },
      );
      return data.acquireMutationLock;
    },
    async releaseMutationLock(id) {
      const data = await call<{ releaseMutationLock: boolean }>('mutation ($id: ID!) { releaseMutationLock(id: $id) }', { id });
      return data.releaseMutationLock;
    },
  };
}
