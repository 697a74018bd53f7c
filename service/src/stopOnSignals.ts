import type { Logger } from './logger';

/** What {@link stopOnSignals} hands back to an entry point. */
export interface SignalStop {
  /** A stop has begun (a signal, or the entry point's own `stop`). */
  readonly stopping: boolean;
  /** Stops what started, once: says why, then exits with `exitCode` (1 when stopping failed). */
  stop(reason: string, exitCode?: number): void;
}

/**
 * The Ctrl-C of a long-running entry point (`npm start`, `npm run start:cluster`): SIGINT and SIGTERM
 * stop what `started` resolves to, once, saying so, and end the process. Installed in the tick the
 * start begins, so a signal while starting still stops whatever already runs.
 */
export function stopOnSignals(started: Promise<{ stop(): Promise<void> }>, log: Logger, say: (line: string) => void, what: string): SignalStop {
  let stopping = false;
  const stop = (reason: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    say(`${reason}: stopping ${what}…`);
    started
      .then((running) => running.stop())
      .then(
        () => {
          say('stopped');
          process.exit(exitCode);
        },
        (err: unknown) => {
          log.fatal({ err }, 'stopping failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  return {
    get stopping() {
      return stopping;
    },
    stop,
  };
}
