import { errorCodeSchema, MeshError } from '@keelson/schema';

/** One GraphQL operation against another mesh service. */
export type ServiceCall = <T>(query: string, variables?: Record<string, unknown>) => Promise<T>;

interface Answer<T> {
  data?: T | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * Calls another mesh service over its GraphQL API by URL (services never import each other).
 * Its errors keep their registry code; an unreachable service is SERVICE_UNAVAILABLE; an answer
 * without data or with an unknown code is UPSTREAM_FAILED.
 * @param name how messages name the service, e.g. `the projects subgraph`
 * @param opts.timeoutMs per call. @default 30000
 */
export function serviceCaller(name: string, url: string, opts: { timeoutMs?: number } = {}): ServiceCall {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  return async <T>(query: string, variables: Record<string, unknown> = {}): Promise<T> => {
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      throw new MeshError('SERVICE_UNAVAILABLE', `${name} at ${url} is unreachable (${(err as Error).message})`);
    }
    const body = (await res.json().catch(() => ({}))) as Answer<T>;
    const first = body.errors?.[0];
    if (first) {
      const code = errorCodeSchema.safeParse(first.extensions?.code);
      throw new MeshError(code.success ? code.data : 'UPSTREAM_FAILED', first.message);
    }
    if (!body.data) throw new MeshError('UPSTREAM_FAILED', `${name} answered ${res.status} without data`);
    return body.data;
  };
}
