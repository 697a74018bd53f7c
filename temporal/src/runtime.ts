import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';

const levels: Record<string, LogLevel> = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', silent: 'ERROR' };

/**
 * Sets the SDK's process-wide logger once, before the first worker exists; later calls are no-ops
 * (the Runtime can be installed only once per process).
 * @param level a mesh log level (`debug` … `error`). @default warn
 */
export function configureTemporalRuntime(level = 'warn'): void {
  try {
    Runtime.install({ logger: new DefaultLogger(levels[level] ?? 'WARN') });
  } catch {
    // Already installed or instantiated in this process.
  }
}
