import { MeshError, type EventEnvelope } from '@keelson/schema';
import { registerLagSource, type LagSample } from '@keelson/service';
import type { EventNotifier, Ticket } from './notifier';

/** How a follower reads one stream: a filtered page, and a hook for filters that grow as they read. */
export interface StreamReader<P> {
  /**
   * Up to one page of the events strictly after `after` that this follower wants, in order.
   * `ticket` is the notification ticket taken right before this read: the read must see at least
   * every commit notified before it (a read that starts after the call does).
   */
  read(after: number, ticket: Ticket): Promise<EventEnvelope<P>[]>;
  /** Sees each event as it is yielded, before the next read (e.g. to follow a renamed key). */
  seen?(event: EventEnvelope<P>): void;
  /** Who follows, for the `keelson_event_log_lag_events` gauge. @default '<stream> follower' */
  consumer?: string;
  /**
   * The reader skips events of the stream (a key or another filter): its lag counts only what it
   * has read and not delivered, since the stream's head says nothing about what it wants.
   */
  filtered?: boolean;
}

/** Every follower live in this process, for the `keelson_event_log_lag_events` gauge. */
const liveFollowers = new Set<{ lag(): LagSample }>();
registerLagSource(() => [...liveFollowers].map((f) => f.lag()));

/**
 * The one reader loop of the event log: replays what a follower missed after `after`, then follows
 * live — in order, no gap, no duplicate. The NOTIFY ticket is taken before each read, so a commit
 * landing after the read's snapshot wakes it. Ends when the consumer calls `return()`, or when the
 * notifier stops; a read failure ends it with SERVICE_UNAVAILABLE (resume from the last cursor).
 */
export function followStream<P>(notifier: EventNotifier, stream: string, after: number, reader: StreamReader<P>): AsyncIterableIterator<EventEnvelope<P>> {
  return new Follower<P>(notifier, stream, after, reader);
}

class Follower<P> implements AsyncIterableIterator<EventEnvelope<P>> {
  private buffer: EventEnvelope<P>[] = [];
  private finished = false;
  private readonly abort = new AbortController();

  constructor(
    private readonly notifier: EventNotifier,
    private readonly stream: string,
    private cursor: number,
    private readonly reader: StreamReader<P>,
  ) {}

  /** Events of the stream past this follower's cursor as far as this process knows. */
  lag(): LagSample {
    const consumer = this.reader.consumer ?? `${this.stream} follower`;
    if (this.reader.filtered) return { stream: this.stream, consumer, lag: this.buffer.length };
    const last = this.buffer[this.buffer.length - 1]?.seq ?? this.cursor;
    const head = Math.max(this.notifier.headOf(this.stream), last);
    return { stream: this.stream, consumer, lag: Math.max(0, head - this.cursor) };
  }

  async next(): Promise<IteratorResult<EventEnvelope<P>>> {
    if (!this.finished) liveFollowers.add(this);
    await this.notifier.ready();
    while (!this.finished) {
      const event = this.buffer.shift();
      if (event) {
        this.cursor = event.seq;
        this.reader.seen?.(event);
        return { value: event, done: false };
      }
      // A stopped notifier never wakes this follower again: end rather than poll the table.
      if (this.notifier.isStopped) return this.return();
      const ticket = this.notifier.ticket(this.stream);
      try {
        this.buffer = await this.reader.read(this.cursor, ticket);
      } catch (err) {
        await this.return();
        throw new MeshError('SERVICE_UNAVAILABLE', `reading stream ${this.stream} failed (${(err as Error).message}); resume with your last cursor`);
      }
      if (this.buffer.length === 0 && !this.finished) await this.notifier.wait(ticket, this.abort.signal);
    }
    return { value: undefined, done: true };
  }

  async return(): Promise<IteratorResult<EventEnvelope<P>>> {
    this.finished = true;
    liveFollowers.delete(this);
    this.buffer = [];
    this.abort.abort();
    return { value: undefined, done: true };
  }

  async throw(err: unknown): Promise<IteratorResult<EventEnvelope<P>>> {
    await this.return();
    throw err;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<EventEnvelope<P>> {
    return this;
  }
}
