import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { RouteHandler } from '@keelson/service';
import type { Logger } from '@keelson/service';
import { z } from 'zod';
import { buildGraphiQL, dist, manifestFile } from '../graphiql/build';

/** Where the bundle's files are served: `/graphiql/app.js`, `/graphiql/graphql.worker.js`, … */
export const GRAPHIQL_ASSETS = '/graphiql/';

const manifestSchema = z.object({ files: z.array(z.string().regex(/^[A-Za-z0-9._-]+$/)) });

const types: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.ttf': 'font/ttf',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Keelson Mesh · GraphiQL</title>
<link rel="stylesheet" href="${GRAPHIQL_ASSETS}app.css">
<script type="module" src="${GRAPHIQL_ASSETS}app.js"></script>
</head>
<body><div id="graphiql">Loading GraphiQL…</div></body></html>
`;

/**
 * The page's policy: scripts, workers and styles from this origin only (no inline script, no eval,
 * no blob: workers), requests to this gateway only. Monaco paints its theme through style elements
 * and style attributes it writes at run time (checked in Chromium: hundreds of them), which only
 * `'unsafe-inline'` for styles lets through; styles cannot run code.
 */
function contentSecurityPolicy(host: string | undefined): string {
  // 'self' covers ws: only in CSP 3 browsers; name the WebSocket origin too when the Host is sane.
  const sockets = host && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "worker-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "font-src 'self' data:",
    "img-src 'self' data:",
    `connect-src 'self'${sockets}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function securityHeaders(res: Parameters<RouteHandler>[1], host: string | undefined): void {
  res.setHeader('content-security-policy', contentSecurityPolicy(host));
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('cross-origin-opener-policy', 'same-origin');
}

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
}

/**
 * The bundle of `gateway/graphiql` (built by `npm ci`; built here, once, if a checkout lacks it),
 * read into memory and gzipped once.
 */
export async function loadGraphiQL(log: Logger): Promise<Map<string, Asset>> {
  if (!existsSync(manifestFile)) {
    log.info({ dist }, 'GraphiQL is not bundled yet; bundling it now (once)');
    await buildGraphiQL({ quiet: true, replace: false });
  }
  const { files } = manifestSchema.parse(JSON.parse(readFileSync(manifestFile, 'utf8')));
  const assets = new Map<string, Asset>();
  for (const file of files) {
    const ext = file.slice(file.lastIndexOf('.'));
    const type = types[ext];
    if (!type) continue;
    const body = readFileSync(join(dist, file));
    assets.set(file, { type, body, gzip: gzipSync(body) });
  }
  if (!assets.has('app.js') || !assets.has('app.css')) throw new Error(`the GraphiQL bundle in ${dist} is incomplete; run npm run build:graphiql`);
  return assets;
}

/**
 * GET routes for GraphiQL: the page (at `/` and `/graphiql`) and each file of the bundle under
 * `/graphiql/`. Served without a credential: the page takes the token from its URL's fragment.
 */
export function graphiqlRoutes(assets: Map<string, Asset>): Record<string, RouteHandler> {
  const html: RouteHandler = (req, res) => {
    res.statusCode = 200;
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.setHeader('cache-control', 'no-store');
    securityHeaders(res, req.headers.host);
    res.end(page);
  };
  const routes: Record<string, RouteHandler> = {
    '/': html,
    '/graphiql': html,
    // Browsers ask for it unprompted; nothing to show.
    '/favicon.ico': (_req, res) => {
      res.statusCode = 204;
      res.end();
    },
  };
  for (const [file, asset] of assets) {
    routes[`${GRAPHIQL_ASSETS}${file}`] = (req, res) => {
      res.statusCode = 200;
      res.setHeader('content-type', asset.type);
      res.setHeader('cache-control', 'no-cache');
      securityHeaders(res, req.headers.host);
      const gzip = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''));
      res.setHeader('vary', 'accept-encoding');
      if (gzip) res.setHeader('content-encoding', 'gzip');
      res.end(gzip ? asset.gzip : asset.body);
    };
  }
  return routes;
}
