import { z } from 'zod';

/**
 * The one registry of expected-failure codes. A code travels unchanged as a GraphQL error's
 * `extensions.code` (with `extensions.status`, the HTTP status the seeds give it) and as a Temporal
 * `ApplicationFailure` type.
 */
export const errorCodes = {
  BAD_USER_INPUT: { status: 400, description: 'The input is invalid: a field is missing, malformed or out of range.' },
  UNAUTHENTICATED: { status: 401, description: 'The caller is not authenticated.' },
  FORBIDDEN: { status: 403, description: 'The caller is authenticated but not allowed to do this.' },
  NOT_FOUND: { status: 404, description: 'The named entity does not exist.' },
  CONFLICT: { status: 409, description: 'The change conflicts with existing state (a duplicate, a held lock).' },
  CAPABILITY_UNSUPPORTED: { status: 501, description: 'The target cannot do this operation; the message says why.' },
  TURN_IN_FLIGHT: { status: 409, description: 'A turn is already running for this session.' },
  INTERNAL: { status: 500, description: 'An initialization or registration step failed on the server.' },
  UPSTREAM_FAILED: { status: 502, description: 'A dependency outside the mesh (git remote, model server, CLI) failed.' },
  SERVICE_UNAVAILABLE: { status: 503, description: 'The service is not ready yet; retry after readiness.' },
} as const;

export type ErrorCode = keyof typeof errorCodes;

/**
 * Codes graphql-js, Apollo Server and the gateway raise for a malformed request (HTTP 400). They
 * pass through to clients unmasked, beside the registry codes above.
 */
export const requestErrorCodes = [
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
  'PERSISTED_QUERY_NOT_SUPPORTED',
  'OPERATION_RESOLUTION_FAILURE',
] as const;

export type RequestErrorCode = (typeof requestErrorCodes)[number];
export const errorCodeSchema = z.enum(Object.keys(errorCodes) as [ErrorCode, ...ErrorCode[]]);

/** HTTP status for a code. */
export function statusOf(code: ErrorCode): number {
  return errorCodes[code].status;
}

/** The code a seed's HTTP status maps to (400/401/403/404/409/500/501/502/503). */
export function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400: return 'BAD_USER_INPUT';
    case 401: return 'UNAUTHENTICATED';
    case 403: return 'FORBIDDEN';
    case 404: return 'NOT_FOUND';
    case 409: return 'CONFLICT';
    case 501: return 'CAPABILITY_UNSUPPORTED';
    case 502: return 'UPSTREAM_FAILED';
    case 503: return 'SERVICE_UNAVAILABLE';
    default: return 'INTERNAL';
  }
}

/**
 * An expected failure of a domain operation. Plain TypeScript (no GraphQL import) so domain modules,
 * activities and ribs can throw it; the subgraph kit turns it into a `GraphQLError` and the worker
 * into an `ApplicationFailure` of the same type.
 */
export class MeshError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>) {
    super(message);
    this.name = 'MeshError';
    this.code = code;
    this.status = statusOf(code);
    this.details = details;
  }
}

export function isMeshError(err: unknown): err is MeshError {
  return err instanceof MeshError
    || (typeof err === 'object' && err !== null && (err as { name?: unknown }).name === 'MeshError'
      && typeof (err as { code?: unknown }).code === 'string' && (err as { code: string }).code in errorCodes);
}

/**
 * Postgres SQLSTATEs that say the database cannot serve right now, not that the request is wrong:
 * class 08 (connection exception), class 53 (insufficient resources: too many connections, out of
 * memory or disk), 57P01–57P05 (the server shutting down, crashed, starting up, idle sessions ended)
 * and 57014 (a statement cut off by `statement_timeout`, the bound on a hung or overloaded server).
 */
const unavailableSqlState = /^(08|53)[0-9A-Z]{3}$|^57P0[1-5]$|^57014$/;

/**
 * What node-postgres' pool and client say when a connection cannot be had or goes away, or a
 * statement's answer does not come within the client's own `query_timeout`.
 */
const unavailableDriverMessage =
  /^(timeout exceeded when trying to connect|Connection terminated( unexpectedly| due to connection timeout)?|Query read timeout|Client has encountered a connection error and is not queryable|Client was closed and is not queryable)$/;

/** TypeORM's errors for a statement on a query runner already released (by its connection's error). */
const releasedRunnerErrors = new Set<unknown>(['QueryRunnerAlreadyReleasedError', 'QueryRunnerProviderAlreadyReleasedError']);

/**
 * Whether `err` (or an error it wraps, through `cause` or TypeORM's `driverError`) says the
 * database or a service the request needs is unavailable for now — an error a client may retry
 * (a mutation with the same `idempotencyKey`), shown as `SERVICE_UNAVAILABLE` instead of masked.
 */
export function isUnavailableError(err: unknown): boolean {
  const seen = new Set<unknown>();
  for (let e: unknown = err; typeof e === 'object' && e !== null && !seen.has(e) && seen.size < 8; ) {
    seen.add(e);
    const { code, syscall, message } = e as { code?: unknown; syscall?: unknown; message?: unknown };
    if (typeof code === 'string' && unavailableSqlState.test(code)) return true;
    if (code === 'ECONNREFUSED' && syscall === 'connect') return true;
    // The peer dropped an open connection under a read or a write (a terminated backend's socket).
    if ((code === 'ECONNRESET' && syscall === 'read') || (code === 'EPIPE' && syscall === 'write')) return true;
    if (typeof message === 'string' && unavailableDriverMessage.test(message)) return true;
    // TypeORM releases a query runner whose connection emits an error (a terminated backend): the
    // transaction's next statement then fails with one of these (through the runner, or through the
    // transaction's EntityManager), the lost connection's consequence.
    if (releasedRunnerErrors.has((e as { name?: unknown }).name)) return true;
    e = (e as { driverError?: unknown }).driverError ?? (e as { cause?: unknown }).cause;
  }
  return false;
}

/** The message a client sees for an error {@link isUnavailableError} recognises. */
export const UNAVAILABLE_MESSAGE = 'Service unavailable: the database or a service this request needs is not answering right now; retry shortly (a mutation with the same idempotencyKey)';
