import { randomUUID } from 'node:crypto';
import { isAbsolute, join, resolve } from 'node:path';
import { MeshError, expandHome, isUnavailableError, isUuid } from '@keelson/schema';
import { parseInput } from '@keelson/kit';
import { checkCloneHost, curlResolvePin, GitError, parseCloneUrl, projectWorkflowsDir, redactUrl, runGit, workflowsDigest } from '@keelson/platform';
import { In, QueryFailedError, type EntityManager } from 'typeorm';
import { z } from 'zod';
import { canonicalPathAsync, exists, inspectTarget, mkdirTracked, removeCreated, removeCreatedTree } from '../fs/paths';
import { allowedProjectRoot } from '../fs/projectRoot';
import { missingGitIdentity } from '../git/gitState';
import type { ProjectsDeps } from '../settings';
import { appendProjectEvent } from './project.events';
import { Project } from './project.entity';
import { cloneProjectArgsSchema, createProjectArgsSchema, projectNameArgSchema } from './project.input';

/** TypeORM's Postgres query runner: released with an error, its connection is closed instead of pooled. */
interface PooledRunner {
  releasePostgresConnection(err?: Error): Promise<void>;
}

/** Postgres unique_violation. */
const UNIQUE_VIOLATION = '23505';

function isUniqueViolation(err: unknown): boolean {
  return err instanceof QueryFailedError && (err.driverError as { code?: string }).code === UNIQUE_VIOLATION;
}

const trustSchema = z.strictObject({
  projectId: z.string(),
  trusted: z.boolean({ error: 'expected true or false' }),
});

/** Derives a project name from a repository URL's last path segment (`.git` stripped). */
export function deriveProjectName(url: string): string {
  const last = url.replace(/\/+$/, '').split(/[/:]/).pop() ?? '';
  return last
    .replace(/\.git$/i, '')
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+/, '')
    .slice(0, 64);
}

/**
 * Project registration and creation (seed 000 "Project creation"): validation, the conflict rules,
 * git initialisation of missing or empty targets, clone, and cleanup of operation-created state.
 */
export class ProjectService {
  constructor(private readonly deps: ProjectsDeps) {}

  private get repo() {
    return this.deps.dataSource.getRepository(Project);
  }

  list(): Promise<Project[]> {
    return this.repo.find({ order: { createdAt: 'ASC', name: 'ASC' } });
  }

  byIds(ids: readonly string[]): Promise<Project[]> {
    return this.repo.findBy({ id: In(ids.filter(isUuid)) });
  }

  byName(name: string): Promise<Project | null> {
    return this.repo.findOneBy({ name });
  }

  /** The project or NOT_FOUND. */
  async require(id: string): Promise<Project> {
    const project = isUuid(id) ? await this.repo.findOneBy({ id }) : null;
    if (!project) throw new MeshError('NOT_FOUND', `project ${JSON.stringify(id)} does not exist`);
    return project;
  }

  /** Resolves an explicit rootPath: trimmed, `~`/`~/` expanded, absolute or BAD_USER_INPUT. */
  resolveRootPath(raw: string): string {
    const trimmed = raw.trim();
    if (!trimmed) throw new MeshError('BAD_USER_INPUT', 'input.rootPath: must not be empty when given');
    const expanded = expandHome(trimmed, this.deps.settings.userHome);
    if (!isAbsolute(expanded)) {
      throw new MeshError('BAD_USER_INPUT', `input.rootPath: must be an absolute path (or start with ~/), got ${JSON.stringify(trimmed)}`);
    }
    return resolve(expanded);
  }

  private async assertNoConflict(name: string, canonicalRoot: string, m?: EntityManager): Promise<void> {
    const repo = m ? m.getRepository(Project) : this.repo;
    const byName = await repo.findOneBy({ name });
    if (byName) throw new MeshError('CONFLICT', `a project named "${name}" is already registered`, { projectId: byName.id });
    const byRoot = await repo.findOneBy({ canonicalRoot });
    if (byRoot) {
      throw new MeshError('CONFLICT', `root ${canonicalRoot} is already registered as project "${byRoot.name}"`, { projectId: byRoot.id });
    }
  }

  /**
   * Inserts the row and its event in one transaction (the caller's `outer` one when given); a lost
   * race is CONFLICT.
   */
  private async register(
    project: Project,
    type: 'PROJECT_CREATED' | 'PROJECT_CLONED',
    outer?: EntityManager,
  ): Promise<Project> {
    const insert = async (m: EntityManager) => {
      const saved = await m.getRepository(Project).save(project);
      await appendProjectEvent(this.deps.events, m, type, { projectId: saved.id });
      return saved;
    };
    try {
      return await (outer ? insert(outer) : this.deps.dataSource.transaction(insert));
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new MeshError('CONFLICT', `project "${project.name}" or its root ${project.canonicalRoot} was registered concurrently`);
      }
      // A database not answering is the caller's to retry (SERVICE_UNAVAILABLE, by the error formatter).
      if (isUnavailableError(err)) throw err;
      this.deps.log.error({ err }, 'project registration failed');
      throw new MeshError('INTERNAL', `registering project "${project.name}" failed: ${(err as Error).message}`);
    }
  }

  /**
   * createProject: see seed 000 "Project creation". With `m` its reads and writes are that
   * transaction's (the idempotency claim commits with the row).
   */
  async create(body: unknown, m?: EntityManager): Promise<Project> {
    const input = parseInput(createProjectArgsSchema, body);
    const root = input.rootPath == null
      ? join(this.deps.settings.workspaceRoot, input.name)
      : this.resolveRootPath(input.rootPath);
    const canonicalRoot = await allowedProjectRoot(root, this.deps.settings.keelsonHome, input.rootPath == null ? 'KEELSON_WORKSPACE' : 'input.rootPath');
    return this.underRootLock(canonicalRoot, m, () => this.createAt(input, root, canonicalRoot, m));
  }

  /**
   * Runs `work` holding the advisory lock of one canonical root, from its conflict check to its
   * registration: two operations on the same root (a create under another name, a clone of the same
   * name) take turns, so the second sees the first's row and answers CONFLICT before touching the
   * folder — a loser's cleanup never removes what the winner made. Inside a transaction the lock is
   * that transaction's (held until it commits the row); otherwise a connection of its own holds it.
   */
  private async underRootLock<T>(canonicalRoot: string, m: EntityManager | undefined, work: () => Promise<T>): Promise<T> {
    const key = `keelson-project-root:${canonicalRoot}`;
    if (m) {
      await m.query('SELECT pg_advisory_xact_lock(hashtext($1))', [key]);
      return work();
    }
    const runner = this.deps.dataSource.createQueryRunner();
    let unlocked = false;
    try {
      await runner.connect();
      await runner.query('SELECT pg_advisory_lock(hashtext($1))', [key]);
      try {
        return await work();
      } finally {
        // The work's answer stands whether or not the unlock does.
        unlocked = await runner.query('SELECT pg_advisory_unlock(hashtext($1))', [key]).then(() => true, () => false);
      }
    } finally {
      // A connection that may still hold the lock is closed, not pooled: its session's locks end with it.
      if (unlocked) await runner.release();
      else await (runner as unknown as PooledRunner).releasePostgresConnection(new Error('project root lock not released'));
    }
  }

  private async createAt(input: z.output<typeof createProjectArgsSchema>, root: string, canonicalRoot: string, m?: EntityManager): Promise<Project> {
    await this.assertNoConflict(input.name, canonicalRoot, m);

    const state = await inspectTarget(root);
    if (state === 'not-a-dir') {
      throw new MeshError('BAD_USER_INPUT', `input.rootPath: ${root} exists and is not a directory`);
    }

    let cleanup: () => Promise<string | undefined> = async () => undefined;
    if (state === 'missing' || state === 'empty-dir') {
      let created: string | undefined;
      try {
        created = state === 'missing' ? await mkdirTracked(root) : undefined;
      } catch (err) {
        throw new MeshError('INTERNAL', `project initialization failed: cannot create ${root}: ${(err as Error).message}`);
      }
      // Only what this operation made goes: the root it created and the parents it created that are
      // still empty (a concurrent create may have put its project beside this one), or the .git it
      // added to an empty folder.
      cleanup = () => (created ? removeCreatedTree(root, created) : removeCreated(join(root, '.git')));
      let missing: string[] = [];
      try {
        // "It touches no project files": no template hooks copied, no user hooks run (the runner pins both).
        await runGit(['init', '--quiet', '--template='], { cwd: root, env: this.deps.settings.gitEnv });
        // Read inside the new repository, as the commit reads it: includeIf "gitdir:" applies, and an
        // enclosing repository's local identity does not (git would auto-detect one instead).
        missing = await missingGitIdentity(root, this.deps.settings.gitEnv);
        if (!missing.length) {
          await runGit(['commit', '--allow-empty', '--quiet', '-m', 'Initialize project'], { cwd: root, env: this.deps.settings.gitEnv });
        }
      } catch (err) {
        const cleanupError = await cleanup();
        throw new MeshError(
          'INTERNAL',
          `project initialization failed: ${(err as Error).message}${cleanupError ? `; ${cleanupError}` : ''}`,
        );
      }
      if (missing.length) {
        const cleanupError = await cleanup();
        throw new MeshError(
          'INTERNAL',
          `project initialization failed: git identity is missing ${missing.join(' and ')}; set it with ` +
            missing.map((k) => `git config --global ${k} ${k === 'user.name' ? '"Your Name"' : '"you@example.com"'}`).join(' and ') +
            (cleanupError ? `; ${cleanupError}` : ''),
          { missing },
        );
      }
    }

    // Trusted by default only when the mesh made the folder (or it was empty), or when it brings no
    // workflows of its own: an existing .keelson/workflows is never trusted silently.
    const trusted = state === 'missing' || state === 'empty-dir' || !(await exists(projectWorkflowsDir(root)));
    const project = Object.assign(new Project(), { id: randomUUID(), name: input.name, rootPath: root, canonicalRoot, trusted, trustedWorkflows: trusted ? await workflowsDigest(root) : null });
    try {
      return await this.register(project, 'PROJECT_CREATED', m);
    } catch (err) {
      const cleanupError = await cleanup();
      if (cleanupError && err instanceof MeshError) throw new MeshError(err.code, `${err.message}; ${cleanupError}`, err.details);
      throw err;
    }
  }

  /**
   * cloneProject: an https/ssh URL whose parts git cannot read as options and whose host is public
   * (unless allowed), cloned non-interactively and bounded into a fresh destination beneath the
   * workspace root, registered untrusted. URL credentials are used for the clone only: the clone's
   * remote, messages, logs and events never carry them.
   */
  async clone(body: unknown): Promise<Project> {
    const input = parseInput(cloneProjectArgsSchema, body);
    const url = parseCloneUrl(input.url);
    const shown = redactUrl(input.url);
    const name = input.name ?? deriveProjectName(url.remote);
    const named = projectNameArgSchema.safeParse(name);
    if (!named.success) {
      throw new MeshError('BAD_USER_INPUT', `input.name: cannot derive a valid project name from the URL (got ${JSON.stringify(name)}); pass name`);
    }
    const workspaceRoot = this.deps.settings.workspaceRoot;
    const dest = join(workspaceRoot, name);
    const canonicalRoot = await allowedProjectRoot(dest, this.deps.settings.keelsonHome, 'KEELSON_WORKSPACE');
    return this.underRootLock(canonicalRoot, undefined, () => this.cloneInto(url, shown, name, dest, canonicalRoot));
  }

  private async cloneInto(url: ReturnType<typeof parseCloneUrl>, shown: string, name: string, dest: string, canonicalRoot: string): Promise<Project> {
    const workspaceRoot = this.deps.settings.workspaceRoot;
    await this.assertNoConflict(name, canonicalRoot);
    if (await exists(dest)) {
      throw new MeshError('CONFLICT', `clone destination ${dest} already exists; cloning never writes into an existing path`);
    }
    const addresses = await checkCloneHost(url, { allowPrivateHosts: this.deps.settings.allowPrivateHosts });

    let createdRoot: string | undefined;
    try {
      createdRoot = await mkdirTracked(workspaceRoot);
    } catch (err) {
      throw new MeshError('INTERNAL', `cannot create the workspace root ${workspaceRoot}: ${(err as Error).message}`);
    }
    const cleanup = async () => {
      // The clone, and the workspace root only while empty: a create beside it may have used it since.
      return removeCreatedTree(dest, createdRoot);
    };
    // An https clone connects to the addresses the host was checked at, not to a second answer.
    const pin = curlResolvePin(url, addresses);
    try {
      await runGit(
        [...(pin ? ['-c', `http.curloptResolve=${pin}`] : []), 'clone', '--quiet', '--no-recurse-submodules', '--template=', '--', url.remote, dest],
        { cwd: workspaceRoot, env: this.deps.settings.gitEnv, timeoutMs: this.deps.settings.cloneTimeoutMs, credentials: url.credentials },
      );
    } catch (err) {
      const cleanupError = await cleanup();
      const why = err instanceof GitError ? err.message : String(err);
      throw new MeshError('UPSTREAM_FAILED', `clone of ${shown} failed: ${redactUrl(why)}${cleanupError ? `; ${cleanupError}` : ''}`);
    }

    const project = Object.assign(new Project(), { id: randomUUID(), name, rootPath: dest, canonicalRoot: await canonicalPathAsync(dest), trusted: false, trustedWorkflows: null });
    try {
      return await this.register(project, 'PROJECT_CLONED');
    } catch (err) {
      await cleanup();
      throw err;
    }
  }

  /**
   * setProjectTrust: whether the project's own `.keelson/workflows` may run. A change is written with
   * its PROJECT_TRUSTED / PROJECT_UNTRUSTED event in one transaction; setting the current value
   * changes nothing and appends no event. Trusting records the digest of the workflow files as they
   * are now: trusting again after they changed is a change (a new digest, PROJECT_TRUSTED).
   */
  async setTrust(args: { projectId: string; trusted: boolean }): Promise<Project> {
    const input = parseInput(trustSchema, args);
    await this.require(input.projectId);
    return this.deps.dataSource.transaction(async (m: EntityManager) => {
      const repo = m.getRepository(Project);
      const project = await repo.findOneOrFail({ where: { id: input.projectId }, lock: { mode: 'pessimistic_write' } });
      const digest = input.trusted ? await workflowsDigest(project.rootPath) : null;
      if (project.trusted === input.trusted && project.trustedWorkflows === digest) return project;
      project.trusted = input.trusted;
      project.trustedWorkflows = digest;
      const saved = await repo.save(project);
      await appendProjectEvent(this.deps.events, m, input.trusted ? 'PROJECT_TRUSTED' : 'PROJECT_UNTRUSTED', { projectId: project.id });
      return saved;
    });
  }
}
