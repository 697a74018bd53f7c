import type { EventNotifier } from '@keelson/kit';
import { encodeCursor, harnessEventTypes, MeshError, streams, type EventEnvelope } from '@keelson/schema';
import type { DataSource } from 'typeorm';

/** What a harness event subscription follows. */
export interface HarnessTailFilter {
  /**
   * The ids of one session's lineage (itself and every id it was known by). A `SESSION_UPDATED`
   * naming one of them as `previousSessionId` adds its new id: the subscription follows a rotation.
   */
  sessionIds?: string[];
  /** Every session of one harness. */
  harnessId?: string;
}

interface Row {
  stream: string;
  seq: string;
  key: string;
  type: string;
  payload: Record<string, unknown>;
  at: Date;
}

const PUBLIC_TYPES = [...harnessEventTypes];

/**
 * Replays the `harness` stream after a cursor, then follows it live — the event log's tail
 * (see PROTOCOL.md "Event streams and cursors") with the harness filters: a session lineage that
 * grows on rotation, or a harness prefix. Only the ten client-facing HarnessEvent types are yielded.
 */
export class HarnessEventTail implements AsyncIterableIterator<EventEnvelope<Record<string, unknown>>> {
  private buffer: EventEnvelope<Record<string, unknown>>[] = [];
  private finished = false;
  private readonly abort = new AbortController();
  private readonly keys: Set<string> | null;

  constructor(
    private readonly dataSource: DataSource,
    private readonly notifier: EventNotifier,
    private cursor: number,
    private readonly filter: HarnessTailFilter,
  ) {
    this.keys = filter.sessionIds ? new Set(filter.sessionIds) : null;
  }

  private async read(): Promise<EventEnvelope<Record<string, unknown>>[]> {
    const keys = this.keys ? [...this.keys] : null;
    const prefix = this.filter.harnessId ? `${this.filter.harnessId}:` : null;
    const rows = (await this.dataSource.query(
      `SELECT stream, seq, key, type, payload, at FROM events
       WHERE stream = $1 AND seq > $2 AND type = ANY($3::text[])
         AND ($4::text[] IS NULL OR key = ANY($4::text[]) OR (type = 'SESSION_UPDATED' AND payload->>'previousSessionId' = ANY($4::text[])))
         AND ($5::text IS NULL OR left(key, length($5)) = $5)
       ORDER BY seq LIMIT 500`,
      [streams.harness, this.cursor, PUBLIC_TYPES, keys, prefix],
    )) as Row[];
    return rows.map((r) => {
      const seq = Number(r.seq);
      return { cursor: encodeCursor(seq), stream: r.stream, seq, key: r.key, type: r.type, payload: r.payload, at: r.at };
    });
  }

  async next(): Promise<IteratorResult<EventEnvelope<Record<string, unknown>>>> {
    await this.notifier.ready();
    while (!this.finished) {
      const event = this.buffer.shift();
      if (event) {
        this.cursor = event.seq;
        // A rotation of a followed session: follow its new id from here on.
        if (this.keys && event.type === 'SESSION_UPDATED' && typeof event.payload.previousSessionId === 'string' && this.keys.has(event.payload.previousSessionId)) {
          this.keys.add(event.key);
        }
        return { value: event, done: false };
      }
      if (this.notifier.isStopped) return this.return();
      const ticket = this.notifier.ticket(streams.harness);
      try {
        this.buffer = await this.read();
      } catch (err) {
        await this.return();
        throw new MeshError('SERVICE_UNAVAILABLE', `reading stream ${streams.harness} failed (${(err as Error).message}); resume with your last cursor`);
      }
      if (this.buffer.length === 0 && !this.finished) await this.notifier.wait(ticket, this.abort.signal);
    }
    return { value: undefined, done: true };
  }

  async return(): Promise<IteratorResult<EventEnvelope<Record<string, unknown>>>> {
    this.finished = true;
    this.buffer = [];
    this.abort.abort();
    return { value: undefined, done: true };
  }

  async throw(err: unknown): Promise<IteratorResult<EventEnvelope<Record<string, unknown>>>> {
    await this.return();
    throw err;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<EventEnvelope<Record<string, unknown>>> {
    return this;
  }
}
