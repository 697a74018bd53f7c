import type { EventEnvelope } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { DataSource, EntityManager } from 'typeorm';
import type { EventLog } from './eventLog';
import type { EventNotifier } from './notifier';

export interface DurableConsumerOptions {
  dataSource: DataSource;
  events: EventLog;
  notifier: EventNotifier;
  log: Logger;
  /** The cursor's name: replicas sharing it share the work, exactly once. */
  name: string;
  stream: string;
  /** Events per transaction. @default 50 */
  batchSize?: number;
  /** First delay after a failed batch; doubles up to 5 s. @default 200 */
  retryDelayMs?: number;
  /** Called after each committed batch (e.g. to embed what it stored). */
  onCommitted?: () => void;
  /**
   * Where a consumer with no cursor yet begins: the stream's first event, or its end (only what
   * happens from now on). @default 'start'
   */
  startAt?: 'start' | 'end';
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
 * Exactly-once consumption of one event stream, from a durable cursor (`event_consumer_cursors`,
 * one row per consumer name) — memory capture, the ribs' run-event router and every other
 * follower that must resume where it stopped.
 *
 * Per batch, in one transaction: the cursor row's lock is taken first (the claim), the events after
 * the cursor are read, `prepare` reads whatever they name from elsewhere (bodies over the network),
 * and `apply`'s writes and the new cursor commit together. A crash anywhere leaves either the whole
 * batch and its cursor or neither, and the next run resumes from the cursor; the writes themselves
 * must be idempotent (dedupe keys), so a replay stores nothing new.
 *
 * Replicas sharing a name queue on that lock: while one holds a batch, another waits in Postgres
 * (no polling) and then starts after the batch it waited on, so each batch is prepared and applied
 * by one replica, once — nothing is fetched twice and discarded. A replica that dies mid-batch drops
 * its connection, Postgres releases the lock and the next in line takes the batch. The price is one
 * connection held per consumer while it prepares; `statement_timeout` bounds a wait and
 * `idle_in_transaction_session_timeout` a stalled holder (a failed batch retries from the cursor).
 */
export abstract class DurableConsumer<Prepared> {
  readonly name: string;
  readonly stream: string;
  private readonly batchSize: number;
  private readonly retryDelayMs: number;
  /** Aborted by `stop()`; subclasses bound their fetches with it. */
  protected readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private cursorRowReady = false;

  protected constructor(protected readonly base: DurableConsumerOptions) {
    this.name = base.name;
    this.stream = base.stream;
    this.batchSize = base.batchSize ?? 50;
    this.retryDelayMs = base.retryDelayMs ?? 200;
  }

  /**
   * Reads what the batch's events name, holding the batch's claim (the cursor's transaction is open,
   * so no other replica is preparing it); rejecting fails the batch (retried from the cursor).
   */
  protected abstract prepare(events: readonly EventEnvelope[]): Promise<Prepared>;

  /** Writes the prepared batch inside the cursor's transaction; must be idempotent. */
  protected abstract apply(m: EntityManager, prepared: Prepared): Promise<void>;

  /**
   * Positions the cursor (see `startAt`) and follows the stream live until `stop()`: catches up,
   * then waits for notifications. Resolves once the cursor exists, so nothing after it is missed.
   */
  async start(): Promise<void> {
    await this.ensureCursorRow();
    this.loop ??= this.run();
  }

  /** Stops following; an in-flight batch commits whole or rolls back. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  /** The last stream sequence this consumer has stored (0 before the first). */
  async position(): Promise<number> {
    await this.ensureCursorRow();
    const rows = (await this.base.dataSource.query('SELECT position FROM event_consumer_cursors WHERE consumer = $1', [this.name])) as {
      position: string;
    }[];
    return Number(rows[0]!.position);
  }

  /** Processes every event available now, batch by batch; rejects on the first failed batch. @returns events applied */
  async catchUp(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.step();
      if (n === 0) return total;
      total += n;
    }
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    const { notifier, log } = this.base;
    let delay = this.retryDelayMs;
    while (!signal.aborted) {
      try {
        await notifier.ready();
        // A stopped notifier wakes nobody again: stop rather than spin.
        if (notifier.isStopped) return;
        // Taken before the read: a commit after the read's snapshot wakes the wait below.
        const ticket = notifier.ticket(this.stream);
        const n = await this.step();
        delay = this.retryDelayMs;
        if (n === 0) await notifier.wait(ticket, signal);
      } catch (err) {
        if (signal.aborted) return;
        log.error({ err, consumer: this.name, stream: this.stream }, 'a consumer batch failed; retrying from the durable cursor');
        await sleep(delay, signal);
        delay = Math.min(delay * 2, 5_000);
      }
    }
  }

  private async ensureCursorRow(): Promise<void> {
    if (this.cursorRowReady) return;
    const start = this.base.startAt === 'end' ? 'coalesce((SELECT last_seq FROM event_streams WHERE stream = $2), 0)' : '0';
    await this.base.dataSource.query(
      `INSERT INTO event_consumer_cursors (consumer, stream, position) VALUES ($1, $2, ${start}) ON CONFLICT (consumer) DO NOTHING`,
      [this.name, this.stream],
    );
    this.cursorRowReady = true;
  }

  /**
   * One batch, claimed before anything is read: see the class. Stopped while it waited for the
   * claim, it reads nothing.
   * @returns events applied; 0 when none were waiting
   */
  private async step(): Promise<number> {
    await this.ensureCursorRow();
    let applied = 0;
    await this.base.dataSource.transaction(async (m) => {
      const [row] = (await m.query('SELECT position FROM event_consumer_cursors WHERE consumer = $1 FOR UPDATE', [this.name])) as {
        position: string;
      }[];
      if (this.abort.signal.aborted) return;
      const events = await this.base.events.read(this.stream, Number(row!.position), { limit: this.batchSize, manager: m });
      if (!events.length) return;
      await this.apply(m, await this.prepare(events));
      await m.query('UPDATE event_consumer_cursors SET position = $2, updated_at = now() WHERE consumer = $1', [this.name, events.at(-1)!.seq]);
      applied = events.length;
    });
    if (applied) this.base.onCommitted?.();
    return applied;
  }
}
