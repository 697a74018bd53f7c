import { traceHeaders } from './telemetry/tracing';
import { errorCodeSchema, MeshError } from '@keelson/schema';
import type { ServiceIdentity } from './auth/serviceIdentity';

/**
 * One GraphQL operation against another mesh service; `signal` ends it early (as the timeout does),
 * `timeoutMs` replaces the caller's bound for this call (an operation known to take long).
 */
export type ServiceCall = <T>(query: string, variables?: Record<string, unknown>, opts?: { signal?: AbortSignal; timeoutMs?: number }) => Promise<T>;

interface Answer<T> {
  data?: T | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * Calls another mesh service over its GraphQL API by URL (services never import each other).
 * Its errors keep their registry code; an unreachable service is SERVICE_UNAVAILABLE; an answer
 * without data or with an unknown code is UPSTREAM_FAILED. The code the service answered with is in
 * `details.upstreamCode` (e.g. GRAPHQL_VALIDATION_FAILED, which no registry code stands for).
 * @param name how messages name the service, e.g. `the projects subgraph`
 * @param opts.timeoutMs per call. @default 30000
 * @param opts.identity who the calling service is (subgraphs refuse calls without its assertion).
 */
export function serviceCaller(name: string, url: string, opts: { timeoutMs?: number; identity: ServiceIdentity }): ServiceCall {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  return async <T>(query: string, variables: Record<string, unknown> = {}, call: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<T> => {
    let res: Response;
    try {
      const timeout = AbortSignal.timeout(call.timeoutMs ?? timeoutMs);
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(await opts.identity.headers()), ...traceHeaders() },
        body: JSON.stringify({ query, variables }),
        signal: call.signal ? AbortSignal.any([call.signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new MeshError('SERVICE_UNAVAILABLE', `${name} at ${url} is unreachable (${(err as Error).message})`);
    }
    const body = (await res.json().catch(() => ({}))) as Answer<T>;
    const first = body.errors?.[0];
    if (first) {
      const upstreamCode = first.extensions?.code;
      const code = errorCodeSchema.safeParse(upstreamCode);
      throw new MeshError(code.success ? code.data : 'UPSTREAM_FAILED', first.message, upstreamCode ? { upstreamCode } : undefined);
    }
    if (!body.data) throw new MeshError('UPSTREAM_FAILED', `${name} answered ${res.status} without data`);
    return body.data;
  };
}
