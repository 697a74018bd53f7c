import { ApplicationFailure } from '@temporalio/common';
import { isMeshError, type ErrorCode } from '@keelson/schema';

/** Codes that no retry can fix. */
const permanent: ReadonlySet<ErrorCode> = new Set(['BAD_USER_INPUT', 'NOT_FOUND', 'CONFLICT', 'CAPABILITY_UNSUPPORTED', 'FORBIDDEN', 'UNAUTHENTICATED']);

/** The error types a mesh activity's retry policy must not retry. */
export const nonRetryableErrorTypes: string[] = [...permanent];

/**
 * Runs an activity body, turning a `MeshError` into an `ApplicationFailure` of the same code
 * (CONTRIBUTING.md habit 5), non-retryable when no retry can fix it. Anything else propagates and is retried.
 */
export async function asActivity<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (err) {
    if (isMeshError(err)) {
      throw ApplicationFailure.create({ message: err.message, type: err.code, nonRetryable: permanent.has(err.code), details: err.details ? [err.details] : undefined });
    }
    throw err;
  }
}
