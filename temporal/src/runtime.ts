import { DefaultLogger, Runtime, type LogEntry, type LogLevel } from '@temporalio/worker';

/** Where the SDK's own log lines go (a pino logger fits). */
export interface RuntimeLogSink {
  debug(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** SDK lines that say nothing wrong at a mesh start, kept at debug. */
const ROUTINE = [/^No workflows registered, not polling for workflow tasks/];

/** The SDK's log entries as records of `sink` (its metadata as fields, `sdk: temporal`). */
export function runtimeLogFunction(sink: RuntimeLogSink): (entry: LogEntry) => void {
  return (entry) => {
    const fields = { sdk: 'temporal', ...(entry.meta ?? {}) };
    const level = ROUTINE.some((r) => r.test(entry.message)) ? 'debug' : entry.level === 'TRACE' ? 'debug' : (entry.level.toLowerCase() as 'debug' | 'info' | 'warn' | 'error');
    sink[level](fields, entry.message);
  };
}

const levels: Record<string, LogLevel> = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', silent: 'ERROR' };

export interface TemporalRuntimeOptions {
  /**
   * Serve the SDK's worker metrics (task slots, polls, latencies, sticky cache; `temporal_` prefix)
   * for Prometheus at `http://<address>/metrics`, e.g. `127.0.0.1:4009`. @default none
   */
  metricsAddress?: string;
  /** Where the SDK's log lines go. @default stderr, the SDK's own format */
  log?: RuntimeLogSink;
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
      logger: options.log ? new DefaultLogger(levels[level] ?? 'WARN', runtimeLogFunction(options.log)) : new DefaultLogger(levels[level] ?? 'WARN'),
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
