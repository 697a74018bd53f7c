import { z } from 'zod';

/** A live workspace lease (a git worktree) as a project record lists it. */
export const projectWorkspaceSchema = z.strictObject({
  id: z.string(),
  path: z.string(),
  branch: z.string(),
  purpose: z.string().nullable(),
  /** ISO-8601. */
  acquiredAt: z.string(),
});
export type ProjectWorkspace = z.infer<typeof projectWorkspaceSchema>;

/** The held mutation lock as a project record lists it. */
export const projectLockSchema = z.strictObject({
  id: z.string(),
  purpose: z.string(),
  holder: z.string(),
  /** ISO-8601. */
  acquiredAt: z.string(),
});
export type ProjectLock = z.infer<typeof projectLockSchema>;

/**
 * An operator-global project record. `workspaces` and `mutationLock` are read-only facts a host may
 * add (live leases, the current lock holder); absent means "not reported" (an older host), so a rib
 * degrades rather than reading absence as "none".
 */
export const projectSchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  /** The resolved absolute root. */
  rootPath: z.string(),
  /** ISO-8601. */
  createdAt: z.string(),
  workspaces: z.array(projectWorkspaceSchema).readonly().optional(),
  mutationLock: projectLockSchema.nullable().optional(),
});
export type Project = z.infer<typeof projectSchema>;

/** 1 to 64 characters: a lowercase letter or digit first, then a-z 0-9 - _. */
export const projectNameSchema = z
  .string()
  .min(1, 'a project name is 1 to 64 characters')
  .max(64, 'a project name is 1 to 64 characters')
  .regex(/^[a-z0-9][a-z0-9_-]*$/, 'a project name starts with a lowercase letter or digit and has only a-z, 0-9, - and _');

/** `{ name, rootPath? }`; without rootPath the project lives at `<KEELSON_WORKSPACE>/<name>`. Unknown fields are rejected. */
export const createProjectBodySchema = z.strictObject({
  name: projectNameSchema,
  /** Absolute, or starting with `~`; trimmed. */
  rootPath: z.string().min(1).optional(),
});
export type CreateProjectBody = z.infer<typeof createProjectBodySchema>;

/** `{ url, name? }`; an omitted name derives from the URL. Unknown fields are rejected. */
export const cloneProjectBodySchema = z.strictObject({
  url: z.string().trim().min(1, 'a clone url is required').max(2048),
  name: projectNameSchema.optional(),
});
export type CloneProjectBody = z.infer<typeof cloneProjectBodySchema>;

/** The statuses a project operation rejects with. */
export type ProjectOperationStatus = 400 | 409 | 500 | 502 | 503;

/**
 * How project seams reject: 400 invalid input or target, 409 conflict, 500 initialization or
 * registration failure, 502 clone failure, 503 host service not ready (retry after readiness).
 */
export class ProjectOperationError extends Error {
  readonly status: ProjectOperationStatus;

  constructor(status: ProjectOperationStatus, message: string) {
    super(message);
    this.name = 'ProjectOperationError';
    this.status = status;
  }
}

/** True for a `ProjectOperationError`, also across module copies. */
export function isProjectOperationError(err: unknown): err is ProjectOperationError {
  return (
    err instanceof ProjectOperationError ||
    (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'ProjectOperationError' &&
      typeof (err as { status?: unknown }).status === 'number')
  );
}

/** A request for an isolated checkout of a project. */
export interface AcquireWorkspaceRequest {
  projectId: string;
  purpose?: string;
  /**
   * Where the checkout branches from: `ORIGIN_DEFAULT` fetches origin and takes the branch origin/HEAD
   * names; `HEAD` the project's local HEAD. @default ORIGIN_DEFAULT when the project has an origin, else HEAD
   */
  base?: WorkspaceBaseName;
}

/** Where a workspace branches from. */
export type WorkspaceBaseName = 'ORIGIN_DEFAULT' | 'HEAD';

/** A workspace lease as the projects domain records it. */
export interface WorkspaceLeaseRecord {
  id: string;
  projectId: string;
  path: string;
  branch: string;
  purpose: string | null;
  /** ISO-8601. */
  acquiredAt: string;
}

/** A durable lease on an isolated, dependency-prepared checkout; release it in a `finally`. */
export interface WorkspaceLease extends WorkspaceLeaseRecord {
  /** Ends the lease; idempotent. */
  release(): Promise<void>;
}

/** A request for the advisory per-project mutation lock; the host stamps the holder. */
export interface AcquireMutationLockRequest {
  projectId: string;
  purpose: string;
}

/** A mutation lock as the projects domain records it. */
export interface MutationLockRecord {
  id: string;
  projectId: string;
  purpose: string;
  holder: string;
  /** ISO-8601. */
  acquiredAt: string;
}

/** The advisory lock held while mutating a project's live checkout; release it in a `finally`. */
export interface MutationLock extends MutationLockRecord {
  /** Releases the lock; idempotent. */
  release(): Promise<void>;
}
