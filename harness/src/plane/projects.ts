import { errorCodeSchema, MeshError } from '@keelson/schema';

export interface ProjectInfo {
  id: string;
  name: string;
  rootPath: string;
  /** Live workspace leases (git worktrees) of the project. */
  workspaces: { id: string; path: string }[];
}

/** What the control plane needs of the projects subgraph: where a project's turns may run. */
export interface ProjectsApi {
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
export function projectsGraphqlApi(url: string, opts: { timeoutMs?: number } = {}): ProjectsApi {
  const timeoutMs = opts.timeoutMs ?? 15_000;
  async function call<T>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new MeshError('SERVICE_UNAVAILABLE', `the projects subgraph at ${url} is unreachable (${(err as Error).message})`);
    }
    const body = (await res.json().catch(() => ({}))) as { data?: T; errors?: { message: string; extensions?: { code?: string } }[] };
    const first = body.errors?.[0];
    if (first) {
      const code = errorCodeSchema.safeParse(first.extensions?.code);
      throw new MeshError(code.success ? code.data : 'UPSTREAM_FAILED', `projects subgraph: ${first.message}`);
    }
    if (!body.data) throw new MeshError('UPSTREAM_FAILED', `the projects subgraph answered ${res.status} without data`);
    return body.data;
  }
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
