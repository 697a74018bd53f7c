import type { WorkspaceBaseName } from '@keelson/ribs-contract';
import { WORKSPACE_ACQUIRE_TIMEOUT_MS } from '@keelson/schema';
import { serviceCaller, type ServiceIdentity } from '@keelson/service';

/**
 * The one GraphQL client of the projects subgraph for the packages beside and above the rib host
 * (runs, harness): a subgraph never imports another, so they reach projects over its API. Each
 * caller chooses what a project selects. Its errors keep their registry code; an unreachable
 * subgraph is SERVICE_UNAVAILABLE.
 */
export interface ProjectsSubgraphClient {
  /** The project with the given selection, or null when it does not exist. */
  project<T>(id: string, fields: string): Promise<T | null>;
  /** Every project with the given selection. */
  projects<T>(fields: string): Promise<T[]>;
  /**
   * A dependency-prepared worktree lease (see acquireWorkspace in the projects subgraph): waits up to
   * WORKSPACE_ACQUIRE_TIMEOUT_MS, since the prepare step may run for minutes. A failed fetch or
   * preparation is UPSTREAM_FAILED and leaves nothing behind.
   * @param base where the worktree branches from. @default ORIGIN_DEFAULT with an origin remote, else HEAD
   */
  acquireWorkspace(projectId: string, purpose: string, base?: WorkspaceBaseName): Promise<{ id: string; path: string; branch: string }>;
  releaseWorkspace(id: string): Promise<boolean>;
  /** The project's mutation lock; a second holder is CONFLICT. */
  acquireMutationLock(projectId: string, purpose: string, holder: string): Promise<{ id: string }>;
  releaseMutationLock(id: string): Promise<boolean>;
}

export function projectsSubgraphClient(url: string, opts: { timeoutMs: number; identity: ServiceIdentity }): ProjectsSubgraphClient {
  const call = serviceCaller('the projects subgraph', url, { timeoutMs: opts.timeoutMs, identity: opts.identity });
  return {
    async project<T>(id: string, fields: string) {
      return (await call<{ project: T | null }>(`query ($id: ID) { project(id: $id) { ${fields} } }`, { id })).project;
    },
    async projects<T>(fields: string) {
      return (await call<{ projects: T[] }>(`{ projects { ${fields} } }`)).projects;
    },
    async acquireWorkspace(projectId, purpose, base) {
      const data = await call<{ acquireWorkspace: { id: string; path: string; branch: string } }>(
        'mutation ($p: ID!, $purpose: String, $base: WorkspaceBase) { acquireWorkspace(projectId: $p, purpose: $purpose, base: $base) { id path branch } }',
        { p: projectId, purpose, base },
        { timeoutMs: Math.max(opts.timeoutMs, WORKSPACE_ACQUIRE_TIMEOUT_MS) },
      );
      return data.acquireWorkspace;
    },
    async releaseWorkspace(id) {
      return (await call<{ releaseWorkspace: boolean }>('mutation ($id: ID!) { releaseWorkspace(id: $id) }', { id })).releaseWorkspace;
    },
    async acquireMutationLock(projectId, purpose, holder) {
      const data = await call<{ acquireMutationLock: { id: string } }>(
        'mutation ($p: ID!, $purpose: String!, $holder: String!) { acquireMutationLock(projectId: $p, purpose: $purpose, holder: $holder) { id } }',
        { p: projectId, purpose, holder },
      );
      return data.acquireMutationLock;
    },
    async releaseMutationLock(id) {
      return (await call<{ releaseMutationLock: boolean }>('mutation ($id: ID!) { releaseMutationLock(id: $id) }', { id })).releaseMutationLock;
    },
  };
}
