import type { RunEventRouter } from '@keelson/host';
import type { EventLog, EventNotifier } from '@keelson/kit';
import { streams, type RunEventPayload } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';

export interface RunEventConsumerOptions {
  dataSource: DataSource;
  events: EventLog;
  notifier: EventNotifier;
  router: Pick<RunEventRouter, 'route'>;
  log: Logger;
  /** The cursor row's name: one per set of ribs, so a deployment resumes where it stopped. */
  name: string;
  /** @default 100 */
  batchSize?: number;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Follows the `runs` stream from a durable cursor (`rib_stream_cursors`) and hands each run-lifecycle
 * event to the router (`onRunEvent` deliveries, bound-output publication). A first start begins at
 * the stream's end; a restart resumes after the last batch it committed, so runs that moved while the
 * process was down are still reported (delivery stays best-effort: a batch routed but not yet
 * committed when the process dies is routed again).
 */
export class RunEventConsumer {
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly batchSize: number;

  constructor(private readonly opts: RunEventConsumerOptions) {
    this.batchSize = opts.batchSize ?? 100;
  }

  /** Positions the cursor (at the stream's end when it has none), then follows live until `stop()`. */
  async start(): Promise<void> {
    await this.opts.dataSource.query(
      `INSERT INTO rib_stream_cursors (consumer, stream, position)
       VALUES ($1, $2, coalesce((SELECT last_seq FROM event_streams WHERE stream = $2), 0))
       ON CONFLICT (consumer) DO NOTHING`,
      [this.opts.name, streams.runs],
    );
    this.loop ??= this.run();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** The last `runs` sequence this consumer has routed. */
  async position(): Promise<number> {
    const rows = (await this.opts.dataSource.query('SELECT position FROM rib_stream_cursors WHERE consumer = $1', [this.opts.name])) as { position: string }[];
    return Number(rows[0]?.position ?? 0);
  }

  /** Routes everything available now; resolves with how many events were read. */
  async catchUp(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.step();
      if (n === 0) return total;
      total += n;
    }
  }

  private async run(): Promise<void> {
    const { notifier, log } = this.opts;
    const signal = this.abort.signal;
    let delay = 200;
    while (!signal.aborted) {
      try {
        await notifier.ready();
        if (notifier.isStopped) return;
        // Taken before the read: a commit after the read's snapshot wakes the wait below.
        const ticket = notifier.ticket(streams.runs);
        const n = await this.step();
        delay = 200;
        if (n === 0) await notifier.wait(ticket, signal);
      } catch (err) {
        if (signal.aborted) return;
        log.error({ err }, 'routing run events failed; retrying from the durable cursor');
        await sleep(delay, signal);
        delay = Math.min(delay * 2, 5_000);
      }
    }
  }

  private async step(): Promise<number> {
    const from = await this.position();
    const events = await this.opts.events.read<RunEventPayload>(streams.runs, from, { limit: this.batchSize });
    if (events.length === 0) return 0;
    let last = from;
    for (const event of events) {
      if (this.abort.signal.aborted) break;
      try {
        await this.opts.router.route({ type: event.type, key: event.key, payload: event.payload, at: event.at });
      } catch (err) {
        // A run that cannot be read is skipped, not retried forever: delivery is best-effort.
        this.opts.log.warn({ err, runId: event.key, type: event.type }, 'could not route a run event');
      }
      last = event.seq;
    }
    await this.opts.dataSource.query('UPDATE rib_stream_cursors SET position = $2, updated_at = now() WHERE consumer = $1 AND position < $2', [
      this.opts.name,
      last,
    ]);
    return events.length;
  }
}
