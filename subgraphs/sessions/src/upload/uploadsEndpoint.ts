import type { IncomingMessage, ServerResponse } from 'node:http';
import { uploadOwner, type Uploads } from '@keelson/harness';
import type { SubgraphRouteHandler } from '@keelson/kit';
import { actorOf, effectiveScopes, isMeshError, satisfiesScopes, type Caller } from '@keelson/schema';
import { sendJsonError, type Logger } from '@keelson/service';

/** The scope an upload needs: it stages a file for a turn, as `sendUserTurn` needs `operate`. */
export const UPLOAD_SCOPES = [['operate']] as const;

/**
 * `POST /api/uploads?name=<filename>[&mime=<type>]` of the sessions subgraph, behind the gateway's:
 * the body is the file's bytes (no content-encoding), stored as the caller's upload; answers 201
 * `{ id, path, size }`. The caller is the gateway's signed assertion (401 without one); 403 without
 * `operate`; 400 for a bad name or mime; 413 past KEELSON_UPLOAD_MAX_BYTES (nothing kept).
 */
export function uploadsEndpoint(opts: { uploads: Uploads; log: Logger }): SubgraphRouteHandler {
  return async (req: IncomingMessage, res: ServerResponse, request) => {
    let caller: Caller;
    try {
      caller = await request.caller();
    } catch (err) {
      if (isMeshError(err)) return sendJsonError(res, err.status, err.message, err.code);
      throw err;
    }
    if (req.method !== 'POST') {
      res.setHeader('allow', 'POST');
      return sendJsonError(res, 405, `${req.method ?? 'this method'} is not served: POST the file's bytes to /api/uploads?name=<filename>`, 'BAD_REQUEST');
    }
    if (!satisfiesScopes(effectiveScopes(caller.scopes), UPLOAD_SCOPES.map((s) => [...s]))) {
      return sendJsonError(res, 403, `an upload needs scope operate; the caller (${caller.subject}) has ${caller.scopes.join(', ') || 'none'}`, 'FORBIDDEN');
    }
    const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding !== 'identity' && encoding !== '') return sendJsonError(res, 415, `content-encoding "${encoding}" is not taken for uploads: send the file's bytes as they are`, 'BAD_REQUEST');
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > opts.uploads.maxBytes) {
      return sendJsonError(res, 413, `the upload (${declared} bytes) exceeds ${opts.uploads.maxBytes} bytes (KEELSON_UPLOAD_MAX_BYTES)`, 'BAD_REQUEST');
    }
    const query = new URL(req.url ?? '/', 'http://upload').searchParams;
    try {
      const saved = await opts.uploads.save(req, { name: query.get('name') ?? '', mime: query.get('mime') ?? undefined, owner: uploadOwner(actorOf(caller)) });
      opts.log.info({ uploadId: saved.id, size: saved.size, subject: caller.subject }, 'upload stored');
      res.statusCode = 201;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ id: saved.id, path: saved.path, size: saved.size }));
    } catch (err) {
      if (isMeshError(err)) return sendJsonError(res, err.status, err.message, err.code);
      const status = (err as { status?: number }).status;
      if (status === 413) return sendJsonError(res, 413, (err as Error).message, 'BAD_REQUEST');
      if ((err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE' || req.aborted) {
        opts.log.info({ subject: caller.subject }, 'upload cut short by the client; nothing kept');
        return sendJsonError(res, 400, 'the upload was cut short; nothing was kept', 'BAD_REQUEST');
      }
      throw err;
    }
  };
}
