import { DurableConsumer, type EventLog, type EventNotifier } from '@keelson/platform';
import type { RunEventRouter } from '@keelson/host';
import { streams, type EventEnvelope, type RunEventPayload } from '@keelson/schema';
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

/**
 * Follows the `runs` stream from the platform's durable cursor and hands each run-lifecycle event to
 * the router (`onRunEvent` deliveries, bound-output publication). A first start begins at the
 * stream's end; a restart resumes after the last batch it committed, so runs that moved while the
 * process was down are still reported (delivery stays best-effort: a batch routed but not yet
 * committed when the process dies is routed again).
 */
export class RunEventConsumer extends DurableConsumer<void> {
  constructor(private readonly opts: RunEventConsumerOptions) {
    super({ ...opts, stream: streams.runs, batchSize: opts.batchSize ?? 100, startAt: 'end' });
  }

  protected async prepare(events: readonly EventEnvelope[]): Promise<void> {
    for (const event of events as readonly EventEnvelope<RunEventPayload>[]) {
      // Stopping mid-batch leaves the cursor where it was: the rest is routed after the restart.
      if (this.abort.signal.aborted) throw new Error('stopped while routing run events');
      try {
        await this.opts.router.route({ type: event.type, key: event.key, payload: event.payload, at: event.at });
      } catch (err) {
        // A run that cannot be read is skipped, not retried forever: delivery is best-effort.
        this.opts.log.warn({ err, runId: event.key, type: event.type }, 'could not route a run event');
      }
    }
  }

  protected async apply(): Promise<void> {
    // Routing happened in prepare; the batch commits only the cursor.
  }
}
