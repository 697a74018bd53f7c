import { loadDotEnv } from './dotEnv';
import { createLogger, type Logger } from './logger';
import { startTracing, tracingFromEnv, type Tracing } from './telemetry/tracing';

/**
 * A service's process entry: starts it with a logger (and tracing, when OTEL_EXPORTER_OTLP_* says
 * so), stops it on SIGINT/SIGTERM, exits 1 with the reason logged when it cannot start. `.env` is
 * read first, under the real environment (see {@link loadDotEnv}). `main.ts` files are one call to this.
 */
export function runService<C extends { logLevel: string }>(
  name: string,
  loadConfig: () => C,
  start: (config: C & { log: Logger }) => Promise<{ stop(): Promise<void> }>,
): void {
  let log = createLogger(name);
  let tracing: Tracing | undefined;
  try {
    const dotEnv = loadDotEnv();
    const config = loadConfig();
    log = createLogger(name, config.logLevel);
    tracing = startTracing(tracingFromEnv(process.env), name);
    if (dotEnv.applied.length > 0) log.info({ file: dotEnv.file, variables: dotEnv.applied.length }, 'read .env (the real environment wins)');
    if (tracing.settings.enabled) log.info({ traces: tracing.settings.tracesUrl }, 'tracing on (OTLP/HTTP)');
    start({ ...config, log }).then(
      (running) => {
        const stop = () =>
          void running
            .stop()
            .then(() => tracing?.stop())
            .then(() => process.exit(0));
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      },
      (err: unknown) => {
        log.fatal({ err }, `${name} failed to start`);
        process.exit(1);
      },
    );
  } catch (err) {
    log.fatal({ err }, `${name}: invalid configuration`);
    process.exit(1);
  }
}
