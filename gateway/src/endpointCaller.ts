import type { IncomingMessage } from 'node:http';
import { isMeshError, type Caller, type MeshError } from '@keelson/schema';
import { countRefusal, type AssertionKey, type Logger } from '@keelson/service';

/** What an endpoint the gateway forwards to a subgraph (`/mcp`, `/api/uploads`) needs to know its caller. */
export interface EndpointProxyOptions {
  /** As for `/graphql`: the request too, so device mode decides by its client certificate off loopback (throws a MeshError UNAUTHENTICATED). */
  authenticate(authorization: string | undefined, request: IncomingMessage): Promise<{ caller: Caller }>;
  /** Signs the caller's assertion for the subgraph. */
  assertions: AssertionKey;
  log: Logger;
}

/**
 * The caller of an endpoint request, authenticated as `/graphql` authenticates; undefined once
 * `refuse` answered the refusal (counted in `keelson_refusals_total`).
 */
export async function endpointCaller(req: IncomingMessage, opts: Pick<EndpointProxyOptions, 'authenticate'>, refuse: (err: MeshError) => void): Promise<Caller | undefined> {
  try {
    return (await opts.authenticate(req.headers.authorization, req)).caller;
  } catch (err) {
    if (!isMeshError(err)) throw err;
    countRefusal('gateway', err.code === 'UNAUTHENTICATED' ? 'unauthenticated' : 'credential');
    refuse(err);
    return undefined;
  }
}
