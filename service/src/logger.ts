import pino from 'pino';
import pinoPretty from 'pino-pretty';
import { traceFields } from './telemetry/tracing';

export type Logger = pino.Logger;

/** How log records are written: one JSON object per line, or readable lines for a person. */
export type LogFormat = 'json' | 'pretty';

/**
 * The format `KEELSON_LOG_FORMAT` asks for: `json`, `pretty`, or `auto` (the default: `pretty`
 * when the log goes to a terminal, `json` when it goes to a pipe or a file).
 */
export function logFormatFromEnv(env: Record<string, string | undefined> = process.env, terminal: boolean = process.stderr.isTTY === true): LogFormat {
  const asked = env.KEELSON_LOG_FORMAT?.trim();
  if (asked === 'json' || asked === 'pretty') return asked;
  return terminal ? 'pretty' : 'json';
}

/**
 * The mesh's one logger (pino), on stderr: ISO times, a `service` field naming the service a
 * record is from (once: a process that hosts several binds it per service with `child({ service })`
 * on a logger made without one), `trace_id`/`span_id` inside a traced span. JSON lines, or readable
 * lines in the format {@link logFormatFromEnv} picks.
 * @param service the `service` field of every record; omit it on a root whose children bind theirs
 * @param level @default info
 * @param destination @default stderr, in the environment's format (JSON when given)
 */
export function createLogger(service?: string, level: string = 'info', destination?: pino.DestinationStream): Logger {
  const stream = destination ?? (logFormatFromEnv() === 'pretty' ? prettyStderr() : pino.destination(2));
  return pino({ level, base: service ? { service } : {}, timestamp: pino.stdTimeFunctions.isoTime, mixin: traceFields }, stream);
}

/** Readable lines on stderr, written as they come (no worker thread: nothing is lost at exit). */
function prettyStderr(): pino.DestinationStream {
  return pinoPretty({
    destination: 2,
    sync: true,
    colorize: process.stderr.isTTY === true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'service',
    messageFormat: '{if service}[{service}] {end}{msg}',
  });
}

/** A logger that drops everything (tests that assert on behaviour, not logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
