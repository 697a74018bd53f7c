import { isLoopback } from '@keelson/schema';
import type { Logger } from './logger';

/**
 * Services bind loopback only until authentication exists. A non-loopback address is refused unless
 * the operator opted in with KEELSON_INSECURE_BIND=1 — and then every start says so loudly.
 */
export function assertBindAllowed(service: string, host: string, insecureBind: boolean, log: Logger): void {
  if (isLoopback(host)) return;
  if (!insecureBind) {
    throw new Error(
      `${service}: refusing to bind ${host}: the mesh has no authentication yet, so it binds loopback only. ` +
        'Set KEELSON_HOST=127.0.0.1, or KEELSON_INSECURE_BIND=1 inside a private network you control.',
    );
  }
  log.warn(
    { host },
    `INSECURE: ${service} binds ${host} without authentication because KEELSON_INSECURE_BIND=1; anyone who can reach this address controls the mesh`,
  );
}
