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
import { WorkspaceBase, WorkspaceLease, WorkspacePrepareStatus } from './workspace.entity';
import { prepareWorktree } from './workspacePrepare';

const acquireSchema = z.strictObject({
  projectId: z.string(),
  purpose: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters').nullish(),
  base: z.enum(WorkspaceBase).nullish(),
});

/** An origin URL that is a path on this machine: fetched over the file transport (git's https/ssh-only pin would refuse it). */
function isLocalRemote(url: string): boolean {
  return url.startsWith('/') || url.startsWith('file://') || url.startsWith('./') || url.startsWith('../');
}

/** Where a worktree branches from, resolved. */
interface ResolvedBase {
  base: WorkspaceBase;
  ref: string;
  commit: string;
}

/**
 * Workspace leases: each an isolated git worktree on its own branch under
 * `<KEELSON_HOME>/worktrees/<project>/<lease-id>`, branched from origin's default branch (after a
 * fetch) or the local HEAD, its dependencies prepared in the sandbox; a durable row until released.
 */
export class WorkspaceService {
  constructor(
    private readonly deps: ProjectsDeps,
    private readonly projects: ProjectService,
  ) {}

  /** The fetch in progress per project root: two fetches of one repository at once collide on its ref locks. */
  private readonly fetches = new Map<string, Promise<unknown>>();

  private oneAtATime<T>(root: string, work: () => Promise<T>): Promise<T> {
    const previous = this.fetches.get(root) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(work);
    this.fetches.set(root, next);
    void next.catch(() => undefined).finally(() => {
      if (this.fetches.get(root) === next) this.fetches.delete(root);
    });
    return next;
  }

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

  /**
   * Acquires a lease: resolves the base (`ORIGIN_DEFAULT` — the default when the project has an
   * `origin` remote — fetches origin and takes the tip of the branch origin/HEAD names; `HEAD` the
   * local HEAD), adds the worktree on a new branch at that commit, then runs the prepare step
   * (see `prepareWorktree`). A failed fetch or preparation fails the call with UPSTREAM_FAILED — the
   * preparation's outcome and log tail in `extensions.prepare` — after removing the worktree and its
   * branch: nothing is left behind and no lease is written.
   */
  async acquire(args: { projectId: string; purpose?: string | null; base?: WorkspaceBase | null }): Promise<WorkspaceLease> {
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
    const base = await this.resolveBase(project.name, project.rootPath, git.headCommit, input.base ?? undefined);
    try {
      // At the resolved commit, not the remote-tracking ref: the branch gets no upstream it did not ask for.
      await runGit(['worktree', 'add', '--quiet', '-b', branch, path, base.commit], { cwd: project.rootPath, env });
    } catch (err) {
      await removeCreated(path);
      throw new MeshError('INTERNAL', `creating a worktree for "${project.name}" failed: ${(err as Error).message}`);
    }
    const undo = async () => {
      await runGit(['worktree', 'remove', '--force', path], { cwd: project.rootPath, env }).catch(() => undefined);
      await removeCreated(path);
      await runGit(['worktree', 'prune'], { cwd: project.rootPath, env }).catch(() => undefined);
      await runGit(['branch', '-D', branch], { cwd: project.rootPath, env }).catch(() => undefined);
    };
    let prepare;
    try {
      prepare = await prepareWorktree({
        worktree: path,
        cacheDir: join(this.deps.settings.keelsonHome, 'cache', 'prepare', project.id),
        sandbox: this.deps.settings.sandbox,
        env,
        timeoutMs: this.deps.settings.prepareTimeoutMs,
      });
    } catch (err) {
      await undo();
      throw err;
    }
    if (prepare.status === WorkspacePrepareStatus.FAILED) {
      await undo();
      const last = (prepare.log ?? '').trim().split('\n').slice(-3).join(' | ').slice(-400);
      const how = prepare.exitCode !== null ? `exited with code ${prepare.exitCode}` : 'did not finish';
      this.deps.log.warn({ projectId: project.id, command: prepare.command, exitCode: prepare.exitCode }, 'workspace preparation failed; the worktree was removed');
      throw new MeshError(
        'UPSTREAM_FAILED',
        `preparing a workspace of "${project.name}" failed: \`${prepare.command!.join(' ')}\` (from ${prepare.detectedFrom}) ${how}${last ? `: ${last}` : ''}; the worktree and its branch were removed`,
        { prepare },
      );
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
            base: base.base,
            baseRef: base.ref,
            baseCommit: base.commit,
            prepare,
            acquiredAt: new Date(),
            releasedAt: null,
          }),
        );
        await appendProjectEvent(this.deps.events, m, 'WORKSPACE_ACQUIRED', { projectId: project.id, leaseId: id });
        return lease;
      });
    } catch (err) {
      await undo();
      throw err;
    }
  }

  /**
   * The commit a new worktree starts at. Without an explicit base: ORIGIN_DEFAULT when the project
   * has an `origin` remote, else HEAD. ORIGIN_DEFAULT fetches origin (bounded by the clone timeout)
   * and takes the branch `refs/remotes/origin/HEAD` names, else the one origin announces as its HEAD.
   */
  private async resolveBase(name: string, root: string, headCommit: string, asked: WorkspaceBase | undefined): Promise<ResolvedBase> {
    const env = this.deps.settings.gitEnv;
    const originUrl = await runGit(['remote', 'get-url', 'origin'], { cwd: root, env }).then(
      (r) => r.stdout.trim() || undefined,
      () => undefined,
    );
    const base = asked ?? (originUrl ? WorkspaceBase.ORIGIN_DEFAULT : WorkspaceBase.HEAD);
    if (base === WorkspaceBase.HEAD) return { base, ref: 'HEAD', commit: headCommit };
    if (!originUrl) throw new MeshError('BAD_USER_INPUT', `base: expected a project with an origin remote for ORIGIN_DEFAULT, but "${name}" has none; use base: HEAD`);
    const remote = { cwd: root, env, timeoutMs: this.deps.settings.cloneTimeoutMs, ...(isLocalRemote(originUrl) ? { allowProtocols: ['file'] } : {}) };
    const upstream = (what: string, err: unknown) =>
      new MeshError('UPSTREAM_FAILED', `${what} for a workspace of "${name}" failed: ${(err as Error).message}; acquire with base: HEAD to branch from the local HEAD instead`);
    await this.oneAtATime(root, () => runGit(['fetch', '--quiet', '--no-write-fetch-head', 'origin'], remote)).catch((err: unknown) => {
      throw upstream('git fetch origin', err);
    });
    let branch = await runGit(['symbolic-ref', '--quiet', 'refs/remotes/origin/HEAD'], { cwd: root, env }).then(
      (r) => r.stdout.trim().replace(/^refs\/remotes\/origin\//, ''),
      () => undefined,
    );
    if (!branch) {
      const listed = await runGit(['ls-remote', '--symref', 'origin', 'HEAD'], remote).catch((err: unknown) => {
        throw upstream("reading origin's default branch", err);
      });
      branch = /^ref: refs\/heads\/(\S+)\s+HEAD/m.exec(listed.stdout)?.[1];
      if (!branch) throw new MeshError('UPSTREAM_FAILED', `origin of "${name}" names no default branch (its HEAD is no branch); use base: HEAD`);
    }
    // A full ref name that cannot be read as an option.
    const ref = `refs/remotes/origin/${branch}`;
    const commit = await runGit(['rev-parse', '--verify', '--quiet', '--end-of-options', `${ref}^{commit}`], { cwd: root, env }).then(
      (r) => r.stdout.trim(),
      () => {
        throw new MeshError('UPSTREAM_FAILED', `origin's default branch ${JSON.stringify(branch)} of "${name}" was not fetched; use base: HEAD`);
      },
    );
    return { base, ref: `origin/${branch}`, commit };
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
