import { serviceCaller, type ServiceIdentity } from '@keelson/service';

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
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The projects subgraph over its GraphQL API (a subgraph never imports another). Its errors keep
 * their registry code; an unreachable subgraph is SERVICE_UNAVAILABLE.
 */
export function harnessProjectsGraphqlApi(url: string, opts: { timeoutMs?: number; identity: ServiceIdentity }): HarnessProjectsApi {
  const call = serviceCaller('the projects subgraph', url, { timeoutMs: opts.timeoutMs ?? 15_000, identity: opts.identity });
  return {
    async project(id) {
      if (!UUID.test(id)) return null;
      return (await call<{ project: ProjectInfo | null }>(`query ($id: ID) { project(id: $id) { ${FIELDS} } }`, { id })).project;
    },
    async projects() {
      return (await call<{ projects: ProjectInfo[] }>(`{ projects { ${FIELDS} } }`)).projects;
    },
  };
}
