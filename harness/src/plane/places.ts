import { stat } from 'node:fs/promises';
import { MeshError } from '@keelson/schema';
import { realpathDeep } from '../confine';
import type { ProjectInfo, HarnessProjectsApi } from './projects';
import type { SessionRecord, TaskRecord } from './store';

/** Where a turn runs: a project's root or one of its live worktree leases (realpath). */
export interface Place {
  cwd: string;
  projectId: string;
  workspaceId: string | null;
}

/**
 * Where sessions and tasks may run: a project's root or one of its live worktree leases, resolved
 * through symlinks and checked again before every turn (confinement).
 */
export class Places {
  constructor(private readonly projects: HarnessProjectsApi) {}

  /** A project's root, or one of its live worktree leases, resolved through symlinks. */
  async of(projectId: string, workspaceId: string | null): Promise<Place> {
    const project = await this.projects.project(projectId);
    if (!project) throw new MeshError('NOT_FOUND', `projectId: no project ${projectId}`);
    let dir = project.rootPath;
    if (workspaceId) {
      const ws = project.workspaces.find((w) => w.id === workspaceId);
      if (!ws) throw new MeshError('NOT_FOUND', `workspaceId: ${workspaceId} is not a live workspace lease of project ${project.name}`);
      dir = ws.path;
    }
    const cwd = await realpathDeep(dir);
    const st = await stat(cwd).catch(() => null);
    if (!st?.isDirectory()) throw new MeshError('NOT_FOUND', `the directory ${dir} of project ${project.name} does not exist`);
    return { cwd, projectId: project.id, workspaceId };
  }

  /** The real directories of a project (its root and worktrees); none when there is no such project. */
  async rootsOf(projectId: string): Promise<string[]> {
    const project = await this.projects.project(projectId);
    return project ? rootsOf(project) : [];
  }

  /** The place whose directory is `dir` (a worktree lease wins over its project's root); null outside every project. */
  async containing(dir: string): Promise<Place | null> {
    const cwd = await realpathDeep(dir);
    let place: Place | null = null;
    for (const project of await this.projects.projects()) {
      if ((await realpathDeep(project.rootPath)) === cwd) place = { cwd, projectId: project.id, workspaceId: null };
      for (const ws of project.workspaces) if ((await realpathDeep(ws.path)) === cwd) place = { cwd, projectId: project.id, workspaceId: ws.id };
      if (place) break;
    }
    return place;
  }

  /**
   * Confinement: a session's turns run only in its project's root or a live worktree lease of it,
   * checked (realpath) before every turn.
   */
  async cwdOf(record: SessionRecord): Promise<string> {
    if (!record.projectId) {
      throw new MeshError('FORBIDDEN', `session ${record.id} runs in ${record.cwd ?? 'an unknown directory'}, which is neither a project root nor a leased worktree; turns run only inside a project`);
    }
    let place: Place;
    try {
      place = await this.of(record.projectId, record.workspaceId);
    } catch (err) {
      if (err instanceof MeshError && err.code === 'NOT_FOUND') {
        throw new MeshError('FORBIDDEN', `session ${record.id} cannot run: ${err.message.replace(/^[a-zA-Z]+: /, '')}`);
      }
      throw err;
    }
    if (record.cwd && (await realpathDeep(record.cwd)) !== place.cwd) {
      throw new MeshError('FORBIDDEN', `session ${record.id} was started in ${record.cwd}, which is no longer its project's directory (${place.cwd})`);
    }
    return place.cwd;
  }

  /** Confinement of a task's new session, checked again at each attempt: the project's root is still where it was. */
  async requireTaskRoot(task: TaskRecord): Promise<string> {
    if (!task.projectId || (await this.of(task.projectId, null)).cwd !== (await realpathDeep(task.cwd))) {
      throw new MeshError('FORBIDDEN', `task ${task.id}: ${task.cwd} is no longer its project's root`);
    }
    return task.cwd;
  }
}

function rootsOf(project: ProjectInfo): Promise<string[]> {
  return Promise.all([project.rootPath, ...project.workspaces.map((w) => w.path)].map((p) => realpathDeep(p)));
}
