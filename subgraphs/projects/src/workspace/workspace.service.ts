import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { MeshError, isUuid } from '@keelson/schema';
import { parseInput } from '@keelson/kit';
import { canonicalPath, isInside, runGit } from '@keelson/platform';
import { In, IsNull } from 'typeorm';
import { z } from 'zod';
import { exists, removeCreated } from '../fs/paths';
import { readGitState } from '../git/gitState';
import { appendProjectEvent } from '../project/project.events';
import { Project } from '../project/project.entity';
import type { ProjectService } from '../project/project.service';
import type { ProjectsDeps } from '../settings';
import { WorkspaceLease } from './workspace.entity';

const acquireSchema = z.strictObject({
  projectId: z.string(),
  purpose: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').nullish(),
});

/**
 * Workspace leases: each an isolated git worktree on its own branch under
 * `<KEELSON_HOME>/worktrees/<project>/<lease-id>`, a durable row until released.
 */
export class WorkspaceService {
  constructor(
    private readonly deps: ProjectsDeps,
    private readonly projects: ProjectService,
  ) {}

  /** Live (unreleased) leases of the given projects, oldest first. */
  liveFor(projectIds: readonly string[]): Promise<WorkspaceLease[]> {
    return this.deps.dataSource.getRepository(WorkspaceLease).find({
      where: { projectId: In([...projectIds]), releasedAt: IsNull() },
      order: { acquiredAt: 'ASC' },
    });
  }

  byIds(ids: readonly string[]): Promise<WorkspaceLease[]> {
    const valid = ids.filter(isUuid);
    return this.deps.dataSource.getRepository(WorkspaceLease).findBy({ id: In(valid), releasedAt: IsNull() });
  }

  async acquire(args: { projectId: string; purpose?: string | null }): Promise<WorkspaceLease> {
    const input = parseInput(acquireSchema, args);
    const project = await this.projects.require(input.projectId);
    const git = await readGitState(project.rootPath, this.deps.settings.gitEnv);
    if (!git.headCommit) {
      throw new MeshError(
        'BAD_USER_INPUT',
        `project "${project.name}" has no commit yet (${git.isGitRepo ? 'unborn repository' : 'not a git repository'}); a worktree branches from HEAD`,
      );
    }
    const id = randomUUID();
    const branch = `keelson/${project.name}-${id.slice(0, 8)}`;
    const worktrees = join(this.deps.settings.keelsonHome, 'worktrees');
    const path = join(worktrees, project.name, id);
    // Through the mesh's one path resolver: a symlink planted under worktrees/ (a project folder named
    // like a link) cannot send a lease elsewhere.
    if (!isInside(canonicalPath(worktrees, '/'), canonicalPath(path, '/'))) {
      throw new MeshError('INTERNAL', `the worktree path for "${project.name}" (${path}) resolves outside ${worktrees}; remove what links out of it`);
    }
    const env = this.deps.settings.gitEnv;
    try {
      await runGit(['worktree', 'add', '--quiet', '-b', branch, path, 'HEAD'], { cwd: project.rootPath, env });
    } catch (err) {
      await removeCreated(path);
      throw new MeshError('INTERNAL', `creating a worktree for "${project.name}" failed: ${(err as Error).message}`);
    }
    try {
      return await this.deps.dataSource.transaction(async (m) => {
        const lease = await m.getRepository(WorkspaceLease).save(
          Object.assign(new WorkspaceLease(), {
            id,
            projectId: project.id,
            path,
            branch,
            purpose: input.purpose ?? null,
            acquiredAt: new Date(),
            releasedAt: null,
          }),
        );
        await appendProjectEvent(this.deps.events, m, 'WORKSPACE_ACQUIRED', { projectId: project.id, leaseId: id });
        return lease;
      });
    } catch (err) {
      await runGit(['worktree', 'remove', '--force', path], { cwd: project.rootPath, env }).catch(() => undefined);
      await runGit(['branch', '-D', branch], { cwd: project.rootPath, env }).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Removes the worktree and ends the lease; the branch stays, so nothing committed there is lost.
   * Unknown ids are NOT_FOUND; a lease already released answers false.
   */
  async release(id: string): Promise<boolean> {
    if (!isUuid(id)) throw new MeshError('NOT_FOUND', `workspace lease ${JSON.stringify(id)} does not exist`);
    return this.deps.dataSource.transaction(async (m) => {
      const lease = await m.getRepository(WorkspaceLease).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
      if (!lease) throw new MeshError('NOT_FOUND', `workspace lease ${JSON.stringify(id)} does not exist`);
      if (lease.releasedAt) return false;
      const project = await m.getRepository(Project).findOneByOrFail({ id: lease.projectId });
      const env = this.deps.settings.gitEnv;
      if (await exists(lease.path)) {
        await runGit(['worktree', 'remove', '--force', lease.path], { cwd: project.rootPath, env }).catch(async (err: Error) => {
          throw new MeshError('INTERNAL', `removing worktree ${lease.path} failed: ${err.message}`);
        });
      } else {
        await runGit(['worktree', 'prune'], { cwd: project.rootPath, env }).catch(() => undefined);
      }
      lease.releasedAt = new Date();
      await m.getRepository(WorkspaceLease).save(lease);
      await appendProjectEvent(this.deps.events, m, 'WORKSPACE_RELEASED', { projectId: project.id, leaseId: id });
      return true;
    });
  }
}
