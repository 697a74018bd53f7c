import { errorCodes, isUnavailableError, requestErrorCodes, statusOf, UNAVAILABLE_MESSAGE, type ErrorCode, type RequestErrorCode } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import { GraphQLError, type GraphQLFormattedError } from 'graphql';

export type GatewayErrorCode = ErrorCode | RequestErrorCode;

const requestCodes = new Set<string>(requestErrorCodes);

/** Extensions that name the mesh's insides (subgraph names, URLs, stacks) and never reach a client. */
const internalExtensions = ['serviceName', 'response', 'stacktrace', 'exception'];

function statusFor(code: string): number | undefined {
  if (code in errorCodes) return statusOf(code as ErrorCode);
  if (requestCodes.has(code)) return 400;
  return undefined;
}

/** A GraphQL error carrying `extensions.code` and its HTTP `extensions.status`. */
export function gatewayError(code: GatewayErrorCode, message: string, details?: Record<string, unknown>): GraphQLError {
  return new GraphQLError(message, { extensions: { ...details, code, status: statusFor(code) } });
}

/**
 * Shapes every error the gateway sends, over HTTP and over WebSocket alike: errors with a registry
 * or request code keep their message, code and details (subgraph errors included) and gain their
 * status; the gateway's own database unavailable for now (its token lookups) is `SERVICE_UNAVAILABLE`;
 * anything else is masked as `INTERNAL_SERVER_ERROR` and logged with its detail.
 */
export function createGatewayErrorFormatter(log: Logger) {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const code = formatted.extensions?.code;
    const status = typeof code === 'string' ? statusFor(code) : undefined;
    if (typeof code === 'string' && status !== undefined) {
      const extensions: Record<string, unknown> = { ...formatted.extensions, code, status };
      for (const key of internalExtensions) delete extensions[key];
      return { ...formatted, extensions };
    }
    const original = error instanceof GraphQLError ? error.originalError ?? error : error;
    if (isUnavailableError(original)) {
      log.warn({ err: original, path: formatted.path }, 'database or service unavailable (SERVICE_UNAVAILABLE for the client)');
      return {
        message: UNAVAILABLE_MESSAGE,
        ...(formatted.locations ? { locations: formatted.locations } : {}),
        ...(formatted.path ? { path: formatted.path } : {}),
        extensions: { code: 'SERVICE_UNAVAILABLE', status: statusOf('SERVICE_UNAVAILABLE') },
      };
    }
    log.error(
      { err: original, path: formatted.path, code, serviceName: formatted.extensions?.serviceName },
      'internal error (masked for the client)',
    );
    return {
      message: 'Internal server error',
      ...(formatted.locations ? { locations: formatted.locations } : {}),
      ...(formatted.path ? { path: formatted.path } : {}),
      extensions: { code: 'INTERNAL_SERVER_ERROR', status: 500 },
    };
  };
}

export type GatewayErrorFormatter = ReturnType<typeof createGatewayErrorFormatter>;
