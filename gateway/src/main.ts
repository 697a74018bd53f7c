import 'reflect-metadata';
import { jwtSettingsFromEnv, openIdentity, type Identity } from '@keelson/identity';
import { createLogger } from '@keelson/service';
import { loadGatewayConfig } from './config';
import { startGateway } from './startGateway';
import { reloadSupergraphOnChange } from './supergraphReload';

loadGatewayConfig(process.env)
  .then(async ({ logLevel, env, supergraphFile, ...config }) => {
    const log = createLogger('gateway', logLevel);
    let identity: Identity | undefined;
    try {
      if (config.security.auth === 'on') {
        const jwt = jwtSettingsFromEnv(env);
        identity = await openIdentity({ databaseUrl: env.DATABASE_URL, log, pg: config.security.pg, ...(jwt ? { jwt } : {}) });
      }
      const running = await startGateway({ ...config, log, ...(identity ? { credentials: identity.authenticator } : {}) });
      const unwatch = reloadSupergraphOnChange(supergraphFile, running, log);
      const stop = () => {
        unwatch();
        void running.stop().then(() => identity?.close()).then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    } catch (err) {
      log.fatal({ err }, 'gateway failed to start');
      await identity?.close().catch(() => undefined);
      process.exit(1);
    }
  })
  .catch((err: unknown) => {
    process.stderr.write(`gateway: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
