import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { freePort, heapFlags, logFormatFromEnv } from '@keelson/service';

const root = join(__dirname, '..', '..');

/** A gateway in a process of its own (`apps/gateway/main.ts`), owned by the process that started it. */
export interface GatewayProcess {
  pid: number;
  url: string;
  wsUrl: string;
  /**
   * Settles when the process ends: with its exit code and signal, and whether `stop()` asked for it
   * (anything else is a crash the owner reports).
   */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; requested: boolean }>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once it has exited. Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

export interface GatewayProcessOptions {
  /** The environment the mesh was started with; the gateway reads its settings from it. */
  env: NodeJS.ProcessEnv;
  host: string;
  /** 0 picks a free one. */
  port: number;
  /** Where each subgraph of this mesh listens (`KEELSON_<NAME>_URL` for the gateway). */
  subgraphUrls: Record<string, string>;
  /** The gateway's stderr lines (its logs). @default the parent's stderr */
  onStderr?: (chunk: string) => void;
  /** How long to wait for `/health`. @default 60 s */
  readyTimeoutMs?: number;
}

/**
 * Starts the gateway as a child process on the same settings as the in-process one (environment,
 * home and so the assertion key and API tokens, host and port), pointing at this mesh's subgraphs,
 * and resolves once `GET /health` answers. The child is tied to this process by an IPC channel: if
 * this process dies without stopping it, the channel closes and the gateway stops itself.
 */
export async function startGatewayProcess(options: GatewayProcessOptions): Promise<GatewayProcess> {
  const port = options.port || (await freePort());
  const urls = Object.fromEntries(Object.entries(options.subgraphUrls).map(([name, url]) => [`KEELSON_${name.toUpperCase()}_URL`, url]));
  const child = spawn(process.execPath, [...heapFlags(), '-r', './scripts/register.js', 'apps/gateway/main.ts'], {
    cwd: root,
    // Its stderr is a pipe to this process: it logs in the format this process's terminal gets.
    env: { ...options.env, ...urls, KEELSON_HOST: options.host, KEELSON_GATEWAY_PORT: String(port), KEELSON_LOG_FORMAT: logFormatFromEnv(options.env) },
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
  });
  const onStderr = options.onStderr ?? ((chunk: string) => process.stderr.write(chunk));
  let tail = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-2_000);
    onStderr(chunk.toString());
  });
  let requested = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; requested: boolean }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal, requested })),
  );
  let stopping: Promise<void> | undefined;
  const stop = (graceMs = 10_000) =>
    (stopping ??= (async () => {
      requested = true;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
    })());

  const hostInUrl = options.host.includes(':') ? `[${options.host}]` : options.host === '0.0.0.0' ? '127.0.0.1' : options.host;
  // With TLS the gateway serves HTTPS: its health is asked over it, trusting exactly its certificate.
  const cert = options.env.KEELSON_TLS_CERT?.trim() ? await readFile(options.env.KEELSON_TLS_CERT.trim()).catch(() => undefined) : undefined;
  const scheme = cert ? 'https' : 'http';
  const base = `${scheme}://${hostInUrl}:${port}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`the gateway process exited while starting (code ${child.exitCode}, signal ${child.signalCode}): ${tail.trim()}`);
    }
    if (await answersHealth(`${base}/health`, cert)) break;
    if (Date.now() > deadline) {
      await stop(1_000);
      throw new Error(`the gateway process did not answer ${base}/health in time: ${tail.trim()}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return { pid: child.pid!, url: `${base}/graphql`, wsUrl: `${cert ? 'wss' : 'ws'}://${hostInUrl}:${port}/graphql`, exited, stop };
}

/** Whether `GET url` answers 2xx within 2 s; over HTTPS, trusting `cert` whatever name it carries (the child's own, dialled on loopback). */
async function answersHealth(url: string, cert: Buffer | undefined): Promise<boolean> {
  if (!cert) return fetch(url, { signal: AbortSignal.timeout(2_000) }).then((res) => res.ok, () => false);
  return new Promise((resolve) => {
    const req = httpsRequest(url, { ca: cert, checkServerIdentity: () => undefined, timeout: 2_000 }, (res) => {
      res.resume();
      resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}
