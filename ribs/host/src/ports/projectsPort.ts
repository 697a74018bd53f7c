import type { AcquireWorkspaceRequest, CloneProjectBody, CreateProjectBody, MutationLockRecord, Project, WorkspaceLeaseRecord } from '@keelson/ribs-contract';

/**
 * The projects domain as ribs reach it: the same service, rules and errors as the GraphQL
 * operations. Failures reject with a `ProjectOperationError` (or a `MeshError`, whose status the
 * host carries over): 400 invalid input, 409 conflict, 500 initialization, 502 clone, 503 not ready.
 */
export interface ProjectsPort {
  /** A synchronous read of a cache the port keeps fresh; a registration is visible immediately. */
  getProjects(): readonly Project[];
  createProject(body: CreateProjectBody): Promise<Project>;
  cloneProject(body: CloneProjectBody): Promise<Project>;
  /** A dependency-prepared worktree from `req.base`; a failed fetch or preparation rejects (502) and leaves nothing behind. */
  acquireWorkspace(req: AcquireWorkspaceRequest): Promise<WorkspaceLeaseRecord>;
  /** False when the lease was already released. */
  releaseWorkspace(id: string): Promise<boolean>;
  /** A second holder rejects with 409 naming the current holder and purpose. */
  acquireMutationLock(req: { projectId: string; purpose: string; holder: string }): Promise<MutationLockRecord>;
  /** False when the lock was already released. */
  releaseMutationLock(id: string): Promise<boolean>;
}
