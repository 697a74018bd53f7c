import { errorCodes, isMeshError, isUnavailableError, MeshError, requestErrorCodes, statusOf, UNAVAILABLE_MESSAGE, type ErrorCode } from '@keelson/schema';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import type { Logger } from '@keelson/service';

/** Codes graphql-js / Apollo raise themselves for bad requests; passed through unmasked. */
const requestCodes = new Set<string>(requestErrorCodes);

/** A GraphQL error carrying a registry code and its HTTP status. */
export function meshGraphQLError(code: ErrorCode, message: string, details?: Record<string, unknown>): GraphQLError {
  return new GraphQLError(message, { extensions: { ...details, code, status: statusOf(code) } });
}

/**
 * Shapes every error a client sees: mesh errors keep their code, status and details; request
 * errors pass through; a database or service unavailable for now (a pool that cannot connect, a
 * backend terminated, a statement timeout) is `SERVICE_UNAVAILABLE`, which a client may retry;
 * anything else is masked and logged with its detail for operators.
 */
export function createErrorFormatter(log: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = error instanceof GraphQLError ? error.originalError ?? error : error;
    if (isMeshError(original)) {
      const mesh = original as MeshError;
      return {
        ...formatted,
        message: mesh.message,
        extensions: { ...mesh.details, code: mesh.code, status: mesh.status },
      };
    }
    const code = formatted.extensions?.code;
    if (typeof code === 'string' && (code in errorCodes || requestCodes.has(code))) {
      const status = code in errorCodes ? statusOf(code as ErrorCode) : 400;
      return { ...formatted, extensions: { ...formatted.extensions, status } };
    }
    if (code === 'BAD_USER_INPUT' || (error instanceof GraphQLError && !error.originalError && !error.path)) {
      return { ...formatted, extensions: { ...formatted.extensions, code: code ?? 'BAD_USER_INPUT', status: 400 } };
    }
    if (isUnavailableError(original)) {
      log.warn({ err: original, path: formatted.path }, 'database or service unavailable (SERVICE_UNAVAILABLE for the client)');
      return { message: UNAVAILABLE_MESSAGE, locations: formatted.locations, path: formatted.path, extensions: { code: 'SERVICE_UNAVAILABLE', status: statusOf('SERVICE_UNAVAILABLE') } };
    }
    log.error({ err: original, path: formatted.path }, 'internal error (masked for the client)');
    return {
      message: 'Internal server error',
      locations: formatted.locations,
      path: formatted.path,
      extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 },
    };
  };
}
