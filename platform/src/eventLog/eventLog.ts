import { actorOf, decodeCursor, encodeCursor, EVENTS_CHANNEL, type Actor, type EventEnvelope } from '@keelson/schema';
import { currentCaller } from '@keelson/service';
import type { DataSource, EntityManager } from 'typeorm';
import type { EventNotifier, Ticket } from './notifier';
import { followStream } from './followStream';

export interface NewEvent<P = unknown> {
  stream: string;
  /** The entity the event is about; subscriptions following one entity filter on it. */
  key: string;
  type: string;
  /** Ids and small facts only; large bodies are fetched by id. */
  payload: P;
  /** Who caused it. @default the caller of the request being served (none for the mesh's own work) */
  actor?: Actor | null;
}

export interface ReadOptions {
  key?: string;
  /** @default 500 */
  limit?: number;
  /** Reads on this transaction's connection (a reader holding a lock in it). @default a pooled connection */
  manager?: EntityManager;
}

interface EventRow {
  stream: string;
  seq: string;
  key: string;
  type: string;
  payload: unknown;
  at: Date;
  actor: Actor | null;
}

function toEnvelope<P>(row: EventRow): EventEnvelope<P> {
  const seq = Number(row.seq);
  return { cursor: encodeCursor(seq), stream: row.stream, seq, key: row.key, type: row.type, payload: row.payload as P, at: row.at, actor: row.actor ?? null };
}

/** The actor an appended event records. */
function actorFor(event: NewEvent<unknown>): Actor | null {
  if (event.actor !== undefined) return event.actor;
  const caller = currentCaller();
  return caller ? actorOf(caller) : null;
}

/**
 * Appends one event with `manager` (a transaction's, or the data source's own for a lone event).
 * One statement: sequence, row and notification commit or roll back with the state change.
 */
export async function appendEvent<P>(manager: EntityManager, event: NewEvent<P>): Promise<EventEnvelope<P>> {
  checkStreamName(event.stream);
  const rows = (await manager.query(
    `WITH s AS (
       INSERT INTO event_streams (stream, last_seq) VALUES ($1, 1)
       ON CONFLICT (stream) DO UPDATE SET last_seq = event_streams.last_seq + 1
       RETURNING last_seq
     ), e AS (
       INSERT INTO events (stream, seq, key, type, payload, actor)
       SELECT $1, s.last_seq, $2, $3, $4::jsonb, $6::jsonb FROM s
       RETURNING stream, seq, key, type, payload, at, actor
     )
     SELECT e.*, pg_notify($5, e.stream || ':' || e.seq || ':' || e.type) AS notified FROM e`,
    [event.stream, event.key, event.type, JSON.stringify(event.payload ?? {}), EVENTS_CHANNEL, JSON.stringify(actorFor(event))],
  )) as EventRow[];
  return toEnvelope<P>(rows[0]!);
}

/**
 * Tells the stream's readers, at the commit of `manager`'s transaction, of a change to its entities'
 * state that has no event of its own (yet): the notification names the stream's last sequence and no
 * type (`<stream>:<seq>`). Tails find nothing past their cursors; whatever keeps state read from the
 * stream's tables (the gateway's entity cache) drops it, as for any notification that names no type.
 * A run's rows written before the executor's start appends `RUN_STARTED` are one such change.
 */
export async function notifyStreamChange(manager: EntityManager, stream: string): Promise<void> {
  checkStreamName(stream);
  await manager.query(
    `SELECT pg_notify($2, $1 || ':' || coalesce((SELECT last_seq FROM event_streams WHERE stream = $1), 0)) AS notified`,
    [stream, EVENTS_CHANNEL],
  );
}

/** The notification is `<stream>:<seq>:<type>`: a colon in a stream's name would make it ambiguous. */
function checkStreamName(stream: string): void {
  if (stream.length === 0 || stream.includes(':')) throw new Error(`invalid event stream name ${JSON.stringify(stream)}: a name without a colon expected`);
}

/**
 * The durable, resumable event log (outbox). Writers append inside the transaction of the state
 * change they report; each stream's sequence is taken under its counter row's lock, so sequences
 * commit in order and `seq > cursor` never skips a row. NOTIFY carries `<stream>:<seq>:<type>` only.
 */
export class EventLog {
  /** Tails' reads in flight, by stream, key, cursor and notification ticket (see `sharedRead`). */
  private readonly reading = new Map<string, Promise<EventEnvelope[]>>();

  constructor(
    private readonly dataSource: DataSource,
    private readonly notifier: EventNotifier,
  ) {}

  /**
   * Appends one event in the caller's transaction (`manager` from `dataSource.transaction`).
   * One statement: sequence, row and notification commit or roll back with the state change.
   */
  async append<P>(manager: EntityManager, event: NewEvent<P>): Promise<EventEnvelope<P>> {
    return appendEvent(manager, event);
  }

  /** Events strictly after `after` (a cursor or 0), in order. */
  async read<P = unknown>(stream: string, after: number, opts: ReadOptions = {}): Promise<EventEnvelope<P>[]> {
    const limit = opts.limit ?? 500;
    const db = opts.manager ?? this.dataSource;
    const rows = (opts.key === undefined
      ? await db.query(
          'SELECT stream, seq, key, type, payload, at, actor FROM events WHERE stream = $1 AND seq > $2 ORDER BY seq LIMIT $3',
          [stream, after, limit],
        )
      : await db.query(
          'SELECT stream, seq, key, type, payload, at, actor FROM events WHERE stream = $1 AND key = $2 AND seq > $3 ORDER BY seq LIMIT $4',
          [stream, opts.key, after, limit],
        )) as EventRow[];
    return rows.map((r) => toEnvelope<P>(r));
  }

  /**
   * Up to `limit` events per key of one stream after `after`, oldest first, in one statement: a page
   * of each entity's events for a batch of entities (a DataLoader's batch).
   */
  async readByKeys<P = unknown>(stream: string, keys: readonly string[], after: number, limit: number): Promise<Map<string, EventEnvelope<P>[]>> {
    const rows = (await this.dataSource.query(
      `SELECT stream, seq, key, type, payload, at, actor FROM (
         SELECT e.*, row_number() OVER (PARTITION BY e.key ORDER BY e.seq) AS rn
         FROM events e WHERE e.stream = $1 AND e.key = ANY($2::text[]) AND e.seq > $3
       ) x WHERE rn <= $4 ORDER BY key, seq`,
      [stream, [...keys], after, limit],
    )) as EventRow[];
    const out = new Map<string, EventEnvelope<P>[]>(keys.map((k) => [k, []]));
    for (const r of rows) out.get(r.key)?.push(toEnvelope<P>(r));
    return out;
  }

  /**
   * One read for every tail of the same stream, key and cursor woken by the same notification: a
   * commit followed by N subscribers costs one statement, not N. A tail joins only a read started at
   * its own ticket (no notification since): any commit notified before that read began is in its
   * snapshot, and one notified after it wakes the tail again, so sharing never hides an event. The
   * page is copied per tail; its events are shared and must not be mutated.
   */
  private sharedRead<P>(stream: string, after: number, key: string | undefined, ticket: Ticket): Promise<EventEnvelope<P>[]> {
    // No key and the empty key are different reads (the whole stream, and the events keyed '').
    const id = JSON.stringify([stream, key ?? null, after, ticket.version, ticket.epoch]);
    let page = this.reading.get(id);
    if (!page) {
      page = this.read(stream, after, { key }).finally(() => this.reading.delete(id));
      this.reading.set(id, page);
    }
    return page.then((events) => events.slice() as EventEnvelope<P>[]);
  }

  /**
   * Replays what a reader missed after `after` (an opaque cursor; absent = from the start), then
   * follows live: in order, no gap, no duplicate. Ends when the consumer calls `return()`.
   * A read failure ends the iterator with SERVICE_UNAVAILABLE; the consumer resumes from its last cursor.
   */
  tail<P = unknown>(stream: string, after?: string | null, opts: { key?: string; consumer?: string } = {}): AsyncIterableIterator<EventEnvelope<P>> {
    return followStream<P>(this.notifier, stream, decodeCursor(after), {
      read: (cursor, ticket) => this.sharedRead<P>(stream, cursor, opts.key, ticket),
      consumer: opts.consumer ?? `${stream} subscription`,
      filtered: opts.key !== undefined,
    });
  }
}
