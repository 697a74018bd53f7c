import { Readable } from 'node:stream';
import { ASSERTION_HEADER, effectiveScopes, satisfiesScopes, UPLOADS_PATH } from '@keelson/schema';
import { countRefusal, sendJsonError, type EndpointHandler } from '@keelson/service';
import { endpointCaller, type EndpointProxyOptions } from './endpointCaller';

/** The subgraph that stores uploads (the harness control plane attaches them to turns). */
export const UPLOADS_SUBGRAPH = 'sessions';

export interface UploadsProxyOptions extends EndpointProxyOptions {
  /** The sessions subgraph's GraphQL URL in the graph in force; undefined when the graph has none. */
  sessionsUrl(): string | undefined;
}

/**
 * `POST /api/uploads?name=<filename>[&mime=<type>]` on the gateway's origin (seed 002): authenticated
 * as `/graphql` is (401 without a credential), `operate` as `sendUserTurn` (403), the body streamed as
 * it comes to the sessions subgraph with the caller's signed assertion, its answer (`{ id, path,
 * size }`, or a refusal) passed back. Refusals are GraphQL error bodies with `extensions.code`.
 */
export function uploadsProxy(opts: UploadsProxyOptions): EndpointHandler {
  return async (req, res) => {
    const caller = await endpointCaller(req, opts, (err) => sendJsonError(res, err.status, err.message, err.code));
    if (!caller) return;
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return sendJsonError(res, 405, `${req.method ?? 'this method'} is not served: POST the file's bytes to ${UPLOADS_PATH}?name=<filename>`, 'BAD_REQUEST');
    }
    if (!satisfiesScopes(effectiveScopes(caller.scopes), [['operate']])) {
      countRefusal('gateway', 'scope');
      return sendJsonError(res, 403, `an upload needs scope operate; the caller (${caller.subject}) has ${caller.scopes.join(', ') || 'none'}`, 'FORBIDDEN');
    }
    const base = opts.sessionsUrl();
    if (!base) return sendJsonError(res, 503, `the supergraph has no ${UPLOADS_SUBGRAPH} subgraph: uploads are not taken`, 'SERVICE_UNAVAILABLE');
    const target = new URL(UPLOADS_PATH, base);
    target.search = new URL(req.url ?? '/', 'http://gateway').search;
    const headers: Record<string, string> = { [ASSERTION_HEADER]: await opts.assertions.sign(caller) };
    for (const name of ['content-type', 'content-length', 'content-encoding']) {
      const value = req.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    let upstream: Response;
    try {
      upstream = await fetch(target, { method: 'POST', headers, body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' } as RequestInit);
    } catch (err) {
      if (req.destroyed) return void res.end();
      opts.log.warn({ err, subgraph: UPLOADS_SUBGRAPH }, 'uploads: subgraph unreachable');
      return sendJsonError(res, 503, `subgraph "${UPLOADS_SUBGRAPH}" is unreachable; retry shortly`, 'SERVICE_UNAVAILABLE');
    }
    res.statusCode = upstream.status;
    res.setHeader('content-type', upstream.headers.get('content-type') ?? 'application/json');
    const allow = upstream.headers.get('allow');
    if (allow) res.setHeader('allow', allow);
    res.end(Buffer.from(await upstream.arrayBuffer()));
  };
}
