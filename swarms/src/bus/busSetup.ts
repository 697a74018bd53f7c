import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

/** The port a managed ClickClack listens on unless CLICKCLACK_PORT says otherwise. */
export const DEFAULT_CLICKCLACK_PORT = 18080;

/** How the swarm reaches its bus, decided from the environment (SWARM.md §4.1). */
export type BusSetup =
  /** Nothing configured and a binary found: the mesh runs ClickClack itself. */
  | { mode: 'MANAGED'; url: string; binary: string; port: number; dataRoot: string }
  /** A URL or a token: somebody else runs it, and start, stop and reset refuse. */
  | { mode: 'EXTERNAL'; url: string; token?: string }
  /** Neither a binary nor a URL: swarms cannot start, and `reason` says why. */
  | { mode: 'UNAVAILABLE'; reason: string };

export const NO_BINARY_REASON =
  'no clickclack binary: set CLICKCLACK_BIN or put clickclack on PATH, or run ClickClack yourself and set CLICKCLACK_URL and CLICKCLACK_TOKEN';

function isExecutableFile(path: string): boolean {
  try {
    if (!statSync(path).isFile()) return false;
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** `clickclack` on `PATH`, as a shell would find it. */
export function whichClickclack(path: string | undefined): string | undefined {
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'clickclack');
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Decides the bus: `CLICKCLACK_URL` or `CLICKCLACK_TOKEN` → EXTERNAL (the URL defaulting to the
 * loopback port); else `CLICKCLACK_BIN`, else `clickclack` on `PATH` → MANAGED under
 * `<home>/rib-swarm/clickclack`; else UNAVAILABLE with the reason.
 * @param home the Keelson home (KEELSON_HOME)
 */
export function resolveBusSetup(env: Record<string, string | undefined>, home: string): BusSetup {
  const get = (k: string) => {
    const v = env[k]?.trim();
    return v ? v : undefined;
  };
  const portText = get('CLICKCLACK_PORT');
  const port = portText === undefined ? DEFAULT_CLICKCLACK_PORT : Number(portText);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return { mode: 'UNAVAILABLE', reason: `CLICKCLACK_PORT must be a port number (1-65535), got ${JSON.stringify(portText)}` };
  const url = get('CLICKCLACK_URL');
  const token = get('CLICKCLACK_TOKEN');
  if (url || token) {
    const base = (url ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '');
    try {
      const parsed = new URL(base);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      return { mode: 'UNAVAILABLE', reason: `CLICKCLACK_URL must be an http(s) URL, got ${JSON.stringify(url)}` };
    }
    return { mode: 'EXTERNAL', url: base, ...(token ? { token } : {}) };
  }
  const named = get('CLICKCLACK_BIN');
  if (named) {
    if (!isAbsolute(named) && !named.includes('/')) {
      const found = whichClickclack(env.PATH)?.replace(/clickclack$/, named);
      if (found && isExecutableFile(found)) return managed(found, port, home);
    }
    if (!isExecutableFile(named)) return { mode: 'UNAVAILABLE', reason: `CLICKCLACK_BIN=${named} is not an executable file` };
    return managed(named, port, home);
  }
  const onPath = whichClickclack(env.PATH);
  return onPath ? managed(onPath, port, home) : { mode: 'UNAVAILABLE', reason: NO_BINARY_REASON };
}

function managed(binary: string, port: number, home: string): BusSetup {
  return { mode: 'MANAGED', url: `http://127.0.0.1:${port}`, binary, port, dataRoot: join(home, 'rib-swarm', 'clickclack') };
}
