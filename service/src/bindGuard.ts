import { isLoopback } from '@keelson/schema';
import type { Logger } from './logger';

/**
 * With authentication on, a service may bind any address. With `KEELSON_AUTH=off` nobody is asked
 * for a credential, so only loopback is allowed (anything else refuses to start), and every start
 * says loudly that the mesh is open to every local process.
 */
export function assertBindAllowed(service: string, host: string, auth: 'on' | 'off', log: Logger): void {
  if (auth === 'on') return;
  if (!isLoopback(host)) {
    throw new Error(
      `${service}: refusing to bind ${host} with KEELSON_AUTH=off: without authentication the mesh binds loopback only. ` +
        'Turn authentication on (unset KEELSON_AUTH) or bind KEELSON_HOST=127.0.0.1.',
    );
  }
  log.warn({ host }, `INSECURE: ${service} runs with KEELSON_AUTH=off: every process on this machine controls the mesh`);
}
