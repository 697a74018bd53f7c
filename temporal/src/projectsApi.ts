import { errorCodeSchema, MeshError } from '@keelson/schema';

export interface ProjectRef {
  id: string;
  name: string;
  rootPath: string;
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
}

/**
 * The projects subgraph over its GraphQL API (subgraphs never import each other). Its errors keep
 * their registry code; an unreachable subgraph is SERVICE_UNAVAILABLE.
 */
export function projectsGraphqlApi(url: string, opts: { timeoutMs?: number } = {}): ProjectsApi {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  async function call<T>(query: string, variables: Record<string, unknown>): Promise<T> {
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
      throw new MeshError(code.success ? code.data : 'UPSTREAM_FAILED', first.message);
    }
    if (!body.data) throw new MeshError('UPSTREAM_FAILED', `the projects subgraph answered ${res.status} without data`);
    return body.data;
  }
  return {
    async project(id) {
      const data = await call<{ project: ProjectRef | null }>('query ($id: ID) { project(id: $id) { id name rootPath } }', { id });
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
  };
}
