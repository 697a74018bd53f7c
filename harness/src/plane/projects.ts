import { projectsSubgraphClient } from '@keelson/host';
import type { ServiceIdentity } from '@keelson/service';
import { isUuid } from '@keelson/schema';

export interface ProjectInfo {
  id: string;
  name: string;
  rootPath: string;
  /** Live workspace leases (git worktrees) of the project. */
  workspaces: { id: string; path: string }[];
}

/** What the control plane needs of the projects subgraph: where a project's turns may run. */
export interface HarnessProjectsApi {
  /** The project, or null when it does not exist. */
  project(id: string): Promise<ProjectInfo | null>;
  /** Every project (to adopt a native session by its cwd). */
  projects(): Promise<ProjectInfo[]>;
}

const FIELDS = 'id name rootPath workspaces { id path }';

/** The projects subgraph over its GraphQL API (one client, shared with runs). */
export function harnessProjectsGraphqlApi(url: string, opts: { timeoutMs?: number; identity: ServiceIdentity }): HarnessProjectsApi {
  const client = projectsSubgraphClient(url, { timeoutMs: opts.timeoutMs ?? 15_000, identity: opts.identity });
  return {
    project: async (id) => (isUuid(id) ? client.project<ProjectInfo>(id, FIELDS) : null),
    projects: () => client.projects<ProjectInfo>(FIELDS),
  };
}
