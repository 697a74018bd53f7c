/** Error codes that say "this request will never succeed" (retrying cannot help). */
const PERMANENT = new Set(['BAD_USER_INPUT', 'NOT_FOUND', 'FORBIDDEN', 'CAPABILITY_UNSUPPORTED', 'GRAPHQL_VALIDATION_FAILED']);

/** A GraphQL error answer whose code says the request cannot succeed, however often it is retried. */
export class PermanentGraphqlError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'PermanentGraphqlError';
  }
}

interface Answer<T> {
  data?: T | null;
  errors?: { message: string; extensions?: { code?: string } }[];
}

/**
 * POSTs one operation to another subgraph (memory talks to the sessions and runs subgraphs by URL,
 * never by import). Rejects on a transport failure, a non-JSON or 5xx answer and any GraphQL error;
 * an error whose code no retry can fix rejects with {@link PermanentGraphqlError}.
 */
export async function postGraphql<T>(url: string, query: string, variables: Record<string, unknown>, signal: AbortSignal): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ query, variables }),
    signal,
  });
  let body: Answer<T>;
  try {
    body = (await res.json()) as Answer<T>;
  } catch {
    throw new Error(`${url} answered HTTP ${res.status} without a GraphQL body`);
  }
  const first = body.errors?.[0];
  if (first) {
    const code = first.extensions?.code ?? 'INTERNAL_SERVER_ERROR';
    const message = `${url}: ${first.message} (${code})`;
    throw PERMANENT.has(code) ? new PermanentGraphqlError(message, code) : new Error(message);
  }
  if (!res.ok || !body.data) throw new Error(`${url} answered HTTP ${res.status} without data`);
  return body.data;
}
