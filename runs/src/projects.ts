import { projectsSubgraphClient } from '@keelson/host';
import type { ServiceIdentity } from '@keelson/service';

export interface ProjectRef {
  id: string;
  name: string;
  rootPath: string;
  /** Whether the project's own `.keelson/workflows` may run (setProjectTrust). */
  trusted: boolean;
  /** The digest of the workflow files trust was given for; null while not trusted. */
  trustedWorkflowsDigest: string | null;
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

/** The projects subgraph over its GraphQL API (one client, shared with the harness). */
export function projectsGraphqlApi(url: string, opts: { timeoutMs?: number; identity: ServiceIdentity }): ProjectsApi {
  const client = projectsSubgraphClient(url, { timeoutMs: opts.timeoutMs ?? 30_000, identity: opts.identity });
  return {
    project: (id) => client.project<ProjectRef>(id, 'id name rootPath trusted trustedWorkflowsDigest'),
    acquireWorkspace: client.acquireWorkspace,
    releaseWorkspace: client.releaseWorkspace,
    acquireMutationLock: client.acquireMutationLock,
    releaseMutationLock: client.releaseMutationLock,
  };
}
