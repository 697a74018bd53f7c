import { randomUUID } from 'node:crypto';
import { isAbsolute, join, resolve } from 'node:path';
import { MeshError, expandHome, isUuid } from '@keelson/schema';
import { parseInput } from '@keelson/kit';
import { In, QueryFailedError, type EntityManager } from 'typeorm';
import { canonicalPath, exists, inspectTarget, mkdirTracked, removeCreated } from '../fs/paths';
import { missingGitIdentity } from '../git/gitState';
import { GitError, runGit } from '../git/runGit';
import type { ProjectsDeps } from '../settings';
import { appendProjectEvent } from './project.events';
import { Project } from './project.entity';
import { cloneProjectBodySchema, createProjectBodySchema, projectNameSchema } from './project.input';

/** Postgres unique_violation. */
const UNIQUE_VIOLATION = '23505';

function isUniqueViolation(err: unknown): boolean {
  return err instanceof QueryFailedError && (err.driverError as { code?: string }).code === UNIQUE_VIOLATION;
}

/** https://host/path, ssh://[user@]host[:port]/path, or scp-like user@host:path. */
const HTTPS_URL = /^https:\/\/[^\s/@]+(@[^\s/]+)?\/\S+$/i;
const SSH_URL = /^ssh:\/\/([^\s/@]+@)?[^\s/:@]+(:\d+)?\/\S+$/i;
const SCP_URL = /^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:(?!\/\/)[^\s]+$/;

/** Removes credentials from a URL before it reaches a message or a log. */
function redactUrl(url: string): string {
  return url.replace(/([a-z][a-z0-9+.-]*:\/\/)[^@/\s]+@/gi, '$1***@');
}

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

  private async assertNoConflict(name: string, canonicalRoot: string): Promise<void> {
    const byName = await this.repo.findOneBy({ name });
    if (byName) throw new MeshError('CONFLICT', `a project named "${name}" is already registered`, { projectId: byName.id });
    const byRoot = await this.repo.findOneBy({ canonicalRoot });
    if (byRoot) {
      throw new MeshError('CONFLICT', `root ${canonicalRoot} is already registered as project "${byRoot.name}"`, { projectId: byRoot.id });
    }
  }

  /** Inserts the row and its event in one transaction; a lost race is CONFLICT. */
  private async register(
    project: Project,
    type: 'PROJECT_CREATED' | 'PROJECT_CLONED',
  ): Promise<Project> {
    try {
      return await this.deps.dataSource.transaction(async (m: EntityManager) => {
        const saved = await m.getRepository(Project).save(project);
        await appendProjectEvent(this.deps.events, m, type, { projectId: saved.id });
        return saved;
      });
    } catch (err) {
      if (isUniqueViolation(err)) {
        throw new MeshError('CONFLICT', `project "${project.name}" or its root ${project.canonicalRoot} was registered concurrently`);
      }
      this.deps.log.error({ err }, 'project registration failed');
      throw new MeshError('INTERNAL', `registering project "${project.name}" failed: ${(err as Error).message}`);
    }
  }

  /** createProject: see seed 000 "Project creation". */
  async create(body: unknown): Promise<Project> {
    const input = parseInput(createProjectBodySchema, body);
    const root = input.rootPath == null
      ? join(this.deps.settings.workspaceRoot, input.name)
      : this.resolveRootPath(input.rootPath);
    const canonicalRoot = await canonicalPath(root);
    await this.assertNoConflict(input.name, canonicalRoot);

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
      // Only what this operation made goes: the created folders, or the .git it added to an empty folder.
      cleanup = () => removeCreated(created ?? join(root, '.git'));
      let missing: string[] = [];
      try {
        // "It touches no project files": no template hooks copied, no user hooks run.
        await runGit(['-c', 'core.hooksPath=/dev/null', 'init', '--quiet', '--template='], { cwd: root, env: this.deps.settings.gitEnv });
        // Read inside the new repository, as the commit reads it: includeIf "gitdir:" applies, and an
        // enclosing repository's local identity does not (git would auto-detect one instead).
        missing = await missingGitIdentity(root, this.deps.settings.gitEnv);
        if (!missing.length) {
          await runGit(['-c', 'core.hooksPath=/dev/null', 'commit', '--allow-empty', '--quiet', '-m', 'Initialize project'], { cwd: root, env: this.deps.settings.gitEnv });
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

    const project = Object.assign(new Project(), { id: randomUUID(), name: input.name, rootPath: root, canonicalRoot });
    try {
      return await this.register(project, 'PROJECT_CREATED');
    } catch (err) {
      const cleanupError = await cleanup();
      if (cleanupError && err instanceof MeshError) throw new MeshError(err.code, `${err.message}; ${cleanupError}`, err.details);
      throw err;
    }
  }

  /** cloneProject: https/ssh only, fresh destination beneath the workspace root, non-interactive, bounded. */
  async clone(body: unknown): Promise<Project> {
    const input = parseInput(cloneProjectBodySchema, body);
    const url = input.url;
    if (!HTTPS_URL.test(url) && !SSH_URL.test(url) && !SCP_URL.test(url)) {
      throw new MeshError('BAD_USER_INPUT', `input.url: must be an https:// or ssh repository URL, got ${JSON.stringify(redactUrl(url))}`);
    }
    const name = input.name ?? deriveProjectName(url);
    const named = projectNameSchema.safeParse(name);
    if (!named.success) {
      throw new MeshError('BAD_USER_INPUT', `input.name: cannot derive a valid project name from the URL (got ${JSON.stringify(name)}); pass name`);
    }
    const workspaceRoot = this.deps.settings.workspaceRoot;
    const dest = join(workspaceRoot, name);
    const canonicalRoot = await canonicalPath(dest);
    await this.assertNoConflict(name, canonicalRoot);
    if (await exists(dest)) {
      throw new MeshError('CONFLICT', `clone destination ${dest} already exists; cloning never writes into an existing path`);
    }

    let createdRoot: string | undefined;
    try {
      createdRoot = await mkdirTracked(workspaceRoot);
    } catch (err) {
      throw new MeshError('INTERNAL', `cannot create the workspace root ${workspaceRoot}: ${(err as Error).message}`);
    }
    const cleanup = async () => {
      const a = await removeCreated(dest);
      const b = await removeCreated(createdRoot);
      return [a, b].filter(Boolean).join('; ') || undefined;
    };
    try {
      await runGit(
        ['-c', 'core.hooksPath=/dev/null', 'clone', '--quiet', '--no-recurse-submodules', '--template=', '--', url, dest],
        { cwd: workspaceRoot, env: this.deps.settings.gitEnv, timeoutMs: this.deps.settings.cloneTimeoutMs },
      );
    } catch (err) {
      const cleanupError = await cleanup();
      const why = err instanceof GitError ? err.message : String(err);
      throw new MeshError('UPSTREAM_FAILED', `clone of ${redactUrl(url)} failed: ${redactUrl(why)}${cleanupError ? `; ${cleanupError}` : ''}`);
    }

    const project = Object.assign(new Project(), { id: randomUUID(), name, rootPath: dest, canonicalRoot: await canonicalPath(dest) });
    try {
      return await this.register(project, 'PROJECT_CLONED');
    } catch (err) {
      await cleanup();
      throw err;
    }
  }
}
