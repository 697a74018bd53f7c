import pino from 'pino';
import { traceFields } from './telemetry/tracing';

export type Logger = pino.Logger;

/**
 * A structured logger for one service. JSON lines on stderr; `KEELSON_LOG_PRETTY` is not needed —
 * operators pipe through `pino-pretty` if they want colour. A line logged inside a traced span
 * carries its `trace_id` and `span_id` (tracing on, see `telemetry/tracing.ts`).
 * @param level @default info
 * @param destination @default stderr
 */
export function createLogger(name: string, level: string = 'info', destination: pino.DestinationStream = pino.destination(2)): Logger {
  return pino({ name, level, base: { service: name }, mixin: traceFields }, destination);
}

/** A logger that drops everything (tests that assert on behaviour, not logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
