import pino from 'pino';

export type Logger = pino.Logger;

/**
 * A structured logger for one service. JSON lines on stderr; `KEELSON_LOG_PRETTY` is not needed —
 * operators pipe through `pino-pretty` if they want colour.
 * @param level @default info
 */
export function createLogger(name: string, level: string = 'info'): Logger {
  return pino({ name, level, base: { service: name } }, pino.destination(2));
}

/** A logger that drops everything (tests that assert on behaviour, not logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
