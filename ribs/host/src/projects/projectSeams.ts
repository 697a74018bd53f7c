import { describeZodError, isMeshError } from '@keelson/schema';
import {
  cloneProjectBodySchema,
  createProjectBodySchema,
  isProjectOperationError,
  ProjectOperationError,
  type MutationLock,
  type ProjectOperationStatus,
  type RibContext,
  type WorkspaceLease,
} from '@keelson/ribs-contract';
import { z } from 'zod';
import { errorMessage } from '../errors';
import type { ProjectsPort } from '../ports/projectsPort';
import type { WarningSink } from '../warnings';

const label = z.string().trim().min(1, 'is required').max(200, 'is at most 200 characters');
const acquireWorkspaceSchema = z.strictObject({
  projectId: z.string().min(1, 'is required'),
  purpose: label.optional(),
  base: z.enum(['ORIGIN_DEFAULT', 'HEAD'], { error: 'expected ORIGIN_DEFAULT or HEAD' }).optional(),
});
const acquireLockSchema = z.strictObject({ projectId: z.string().min(1, 'is required'), purpose: label });

const STATUSES: readonly ProjectOperationStatus[] = [400, 409, 500, 502, 503];

/** Any failure of the projects domain as the `ProjectOperationError` the seed promises. */
export function toProjectOperationError(err: unknown): ProjectOperationError {
  if (isProjectOperationError(err)) return err;
  if (isMeshError(err)) {
    const status = STATUSES.includes(err.status as ProjectOperationStatus) ? (err.status as ProjectOperationStatus) : err.status === 404 ? 400 : 500;
    return new ProjectOperationError(status, err.message);
  }
  return new ProjectOperationError(500, errorMessage(err));
}

function parse<S extends z.ZodType>(schema: S, value: unknown, root: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ProjectOperationError(400, describeZodError(result.error, root));
  return result.data;
}

/** Makes `release` idempotent: the first call releases, later calls resolve at once. */
function once(release: () => Promise<unknown>): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= release().then(() => undefined));
}

/**
 * The project seams of one rib's context, over the projects domain: bodies are validated (unknown
 * fields rejected, 400), every failure rejects as `ProjectOperationError`, mutations reject with
 * 503 while ribs are still activating (retry after readiness), the lock holder is stamped
 * `rib:<id>`, and leases and locks carry an idempotent `release()`.
 */
export function projectSeams(
  port: ProjectsPort,
  ribId: string,
  opts: { isReady: () => boolean; warn: WarningSink },
): Pick<RibContext, 'getProjects' | 'createProject' | 'cloneProject' | 'acquireWorkspace' | 'acquireMutationLock'> {
  const ready = () => {
    if (!opts.isReady()) throw new ProjectOperationError(503, 'the project service is not ready while ribs activate; retry after readiness');
  };
  const call = async <T>(run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (err) {
      throw toProjectOperationError(err);
    }
  };
  return {
    getProjects() {
      try {
        return port.getProjects();
      } catch (err) {
        opts.warn({ stage: 'runtime', rule: 'projects', ribId, message: `getProjects failed; serving none: ${errorMessage(err)}` });
        return [];
      }
    },
    async createProject(body) {
      ready();
      const parsed = parse(createProjectBodySchema, body, 'body');
      return call(() => port.createProject({ ...parsed, ...(parsed.rootPath !== undefined ? { rootPath: parsed.rootPath.trim() } : {}) }));
    },
    async cloneProject(body) {
      ready();
      const parsed = parse(cloneProjectBodySchema, body, 'body');
      return call(() => port.cloneProject(parsed));
    },
    async acquireWorkspace(req): Promise<WorkspaceLease> {
      ready();
      const parsed = parse(acquireWorkspaceSchema, req, 'req');
      const record = await call(() => port.acquireWorkspace(parsed));
      return { ...record, release: once(() => call(() => port.releaseWorkspace(record.id))) };
    },
    async acquireMutationLock(req): Promise<MutationLock> {
      ready();
      const parsed = parse(acquireLockSchema, req, 'req');
      const record = await call(() => port.acquireMutationLock({ ...parsed, holder: `rib:${ribId}` }));
      return { ...record, release: once(() => call(() => port.releaseMutationLock(record.id))) };
    },
  };
}
