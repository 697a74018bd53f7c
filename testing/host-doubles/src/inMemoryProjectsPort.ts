import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import {
  ProjectOperationError,
  type AcquireWorkspaceRequest,
  type CloneProjectBody,
  type CreateProjectBody,
  type MutationLockRecord,
  type Project,
  type WorkspaceLeaseRecord,
} from '@keelson/ribs-contract';
import type { ProjectsPort } from '@keelson/host';

/**
 * A process-local `ProjectsPort` with the projects domain's conflict rules (tests): duplicate names
 * and roots conflict, a second lock holder conflicts naming the first. Nothing touches the disk.
 */
export class InMemoryProjectsPort implements ProjectsPort {
  private readonly projects: Project[] = [];
  private readonly leases = new Map<string, WorkspaceLeaseRecord>();
  private readonly locks = new Map<string, MutationLockRecord>();

  constructor(private readonly workspaceRoot = '/workspace') {}

  getProjects(): readonly Project[] {
    return this.projects.map((project) => {
      const lock = [...this.locks.values()].find((l) => l.projectId === project.id);
      return {
        ...project,
        workspaces: [...this.leases.values()]
          .filter((l) => l.projectId === project.id)
          .map(({ id, path, branch, purpose, acquiredAt }) => ({ id, path, branch, purpose, acquiredAt })),
        mutationLock: lock ? { id: lock.id, purpose: lock.purpose, holder: lock.holder, acquiredAt: lock.acquiredAt } : null,
      };
    });
  }

  async createProject(body: CreateProjectBody): Promise<Project> {
    const rootPath = body.rootPath ?? join(this.workspaceRoot, body.name);
    if (!rootPath.startsWith('/')) throw new ProjectOperationError(400, `rootPath must be absolute, got '${rootPath}'`);
    if (this.projects.some((p) => p.name === body.name)) throw new ProjectOperationError(409, `a project named '${body.name}' already exists`);
    if (this.projects.some((p) => p.rootPath === rootPath)) throw new ProjectOperationError(409, `a project already lives at '${rootPath}'`);
    const project: Project = { id: randomUUID(), name: body.name, rootPath, createdAt: new Date().toISOString() };
    this.projects.push(project);
    return project;
  }

  async cloneProject(body: CloneProjectBody): Promise<Project> {
    const name = body.name ?? /([^/:]+?)(\.git)?\/?$/.exec(body.url)?.[1]?.toLowerCase();
    if (!name) throw new ProjectOperationError(400, `cannot derive a project name from '${body.url}'`);
    return this.createProject({ name });
  }

  async acquireWorkspace(req: AcquireWorkspaceRequest): Promise<WorkspaceLeaseRecord> {
    const project = this.requireProject(req.projectId);
    const id = randomUUID();
    const lease: WorkspaceLeaseRecord = {
      id,
      projectId: project.id,
      path: join(project.rootPath, '.worktrees', id),
      branch: `keelson/${id.slice(0, 8)}`,
      purpose: req.purpose ?? null,
      acquiredAt: new Date().toISOString(),
    };
    this.leases.set(id, lease);
    return lease;
  }

  async releaseWorkspace(id: string): Promise<boolean> {
    return this.leases.delete(id);
  }

  async acquireMutationLock(req: { projectId: string; purpose: string; holder: string }): Promise<MutationLockRecord> {
    const project = this.requireProject(req.projectId);
    const held = [...this.locks.values()].find((lock) => lock.projectId === project.id);
    if (held) {
      throw new ProjectOperationError(409, `project '${project.name}' is locked by ${held.holder} for '${held.purpose}'`);
    }
    const lock: MutationLockRecord = { id: randomUUID(), projectId: project.id, purpose: req.purpose, holder: req.holder, acquiredAt: new Date().toISOString() };
    this.locks.set(lock.id, lock);
    return lock;
  }

  async releaseMutationLock(id: string): Promise<boolean> {
    return this.locks.delete(id);
  }

  /** Live leases (for assertions). */
  liveLeases(): WorkspaceLeaseRecord[] {
    return [...this.leases.values()];
  }

  /** Held locks (for assertions). */
  heldLocks(): MutationLockRecord[] {
    return [...this.locks.values()];
  }

  private requireProject(id: string): Project {
    const project = this.projects.find((p) => p.id === id);
    if (!project) throw new ProjectOperationError(400, `no project with id '${id}'`);
    return project;
  }
}
