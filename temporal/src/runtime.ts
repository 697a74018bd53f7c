import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';

const levels: Record<string, LogLevel> = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', silent: 'ERROR' };

export interface TemporalRuntimeOptions {
  /**
   * Serve the SDK's worker metrics (task slots, polls, latencies, sticky cache; `temporal_` prefix)
   * for Prometheus at `http://<address>/metrics`, e.g. `127.0.0.1:4009`. @default none
   */
  metricsAddress?: string;
}

/**
 * Sets the SDK's process-wide logger (and metrics exporter) once, before the first worker exists;
 * later calls are no-ops (the Runtime can be installed only once per process).
 * @param level a mesh log level (`debug` … `error`). @default warn
 * @returns whether this call installed the Runtime
 */
export function configureTemporalRuntime(level = 'warn', options: TemporalRuntimeOptions = {}): boolean {
  try {
    Runtime.install({
      logger: new DefaultLogger(levels[level] ?? 'WARN'),
      ...(options.metricsAddress
        ? { telemetryOptions: { metrics: { prometheus: { bindAddress: options.metricsAddress, useSecondsForDurations: true } } } }
        : {}),
    });
    return true;
  } catch {
    // Already installed or instantiated in this process.
    return false;
  }
}
