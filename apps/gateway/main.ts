import 'reflect-metadata';
import { jwtSettingsFromEnv, openIdentity, type Identity } from '@keelson/identity';
import { createLogger, loadDotEnv, startTracing, tracingFromEnv } from '@keelson/service';
import { loadGatewayConfig, reloadSupergraphOnChange, startGateway } from '@keelson/gateway';

// `.env` under the real environment, before any configuration is read.
Promise.resolve()
  .then(() => {
    loadDotEnv();
    return loadGatewayConfig(process.env);
  })
  .then(async ({ logLevel, env, supergraphFile, ...config }) => {
    const log = createLogger('gateway', logLevel);
    // Spans as `keelson-gateway`, continued in every subgraph (a no-op unless OTEL_EXPORTER_OTLP_* says so).
    const tracing = startTracing(tracingFromEnv(process.env), 'gateway');
    let identity: Identity | undefined;
    try {
      if (config.security.auth === 'on') {
        const jwt = jwtSettingsFromEnv(env);
        identity = await openIdentity({ databaseUrl: env.DATABASE_URL, log, pg: config.security.pg, ...(jwt ? { jwt } : {}) });
      }
      const running = await startGateway({ ...config, log, ...(identity ? { credentials: identity.authenticator } : {}) });
      const unwatch = reloadSupergraphOnChange(supergraphFile, running, log);
      let stopping = false;
      const stop = () => {
        if (stopping) return;
        stopping = true;
        unwatch();
        void running
          .stop()
          .then(() => identity?.close())
          .then(() => tracing.stop())
          .then(() => process.exit(0));
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      // Started by `npm start` (an IPC channel to it): when that process is gone, so is this one.
      if (process.send) process.once('disconnect', stop);
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
