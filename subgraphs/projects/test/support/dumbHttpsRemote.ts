import { execFileSync } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import { createServer as createTcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join, normalize, sep } from 'node:path';

/** A self-signed certificate for 127.0.0.1 and localhost made by the openssl CLI; `cert` doubles as the CA file git trusts. */
export function selfSignedCert(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost', '-keyout', key, '-out', cert],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

export interface DumbHttpsRemote {
  /** https://127.0.0.1:<port> */
  origin: string;
  /** Paths git asked for, in order. */
  requests: string[];
  /** The Authorization header of each request (undefined when none was sent), in order. */
  authorizations: (string | undefined)[];
  close(): Promise<void>;
}

export interface DumbHttpsOptions {
  /** Demand HTTP Basic authentication with these credentials (401 with a challenge otherwise). */
  basicAuth?: { username: string; password: string };
}

/**
 * Serves `root` as static files over https on 127.0.0.1: git's dumb HTTP protocol, for bare
 * repositories prepared with `git update-server-info`. Smart-protocol probes get the static
 * info/refs, which makes git fall back to dumb.
 */
export async function serveDumbHttps(root: string, tls: { cert: string; key: string }, opts: DumbHttpsOptions = {}): Promise<DumbHttpsRemote> {
  const requests: string[] = [];
  const authorizations: (string | undefined)[] = [];
  const expected = opts.basicAuth ? `Basic ${Buffer.from(`${opts.basicAuth.username}:${opts.basicAuth.password}`).toString('base64')}` : undefined;
  const server: Server = createServer(
    { cert: await readFile(tls.cert), key: await readFile(tls.key) },
    (req, res) => {
      void (async () => {
        const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'https://x').pathname));
        requests.push(path);
        authorizations.push(req.headers.authorization);
        if (expected && req.headers.authorization !== expected) {
          res.writeHead(401, { 'www-authenticate': 'Basic realm="fixture"' }).end();
          return;
        }
        const file = join(root, path);
        const st = file.startsWith(root + sep) ? await stat(file).catch(() => undefined) : undefined;
        if (req.method !== 'GET' || !st?.isFile()) {
          res.writeHead(404).end();
          return;
        }
        res.writeHead(200, { 'content-type': path.endsWith('/info/refs') ? 'text/plain' : 'application/octet-stream' });
        res.end(await readFile(file));
      })().catch(() => res.writeHead(500).end());
    },
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `https://127.0.0.1:${port}`,
    requests,
    authorizations,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** A TCP server on 127.0.0.1 that accepts every connection and never says a word (no TLS handshake either). */
export async function serveSilence(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}
