import { followStream, type EventNotifier } from '@keelson/platform';
import { encodeCursor, harnessEventTypes, streams, type EventEnvelope } from '@keelson/schema';
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

export type HarnessEventTail = AsyncIterableIterator<EventEnvelope<Record<string, unknown>>>;

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
 * Replays the `harness` stream after a cursor, then follows it live (the event log's one reader
 * loop, see PROTOCOL.md "Event streams and cursors") with the harness filters: a session lineage
 * that grows on rotation, or a harness prefix. Only the client-facing HarnessEvent types are yielded.
 */
export function followHarnessEvents(dataSource: DataSource, notifier: EventNotifier, after: number, filter: HarnessTailFilter): HarnessEventTail {
  const keys = filter.sessionIds ? new Set(filter.sessionIds) : null;
  const prefix = filter.harnessId ? `${filter.harnessId}:` : null;
  return followStream<Record<string, unknown>>(notifier, streams.harness, after, {
    consumer: 'harnessEvents subscription',
    filtered: keys !== null || prefix !== null,
    async read(cursor) {
      const rows = (await dataSource.query(
        `SELECT stream, seq, key, type, payload, at FROM events
         WHERE stream = $1 AND seq > $2 AND type = ANY($3::text[])
           AND ($4::text[] IS NULL OR key = ANY($4::text[]) OR (type = 'SESSION_UPDATED' AND payload->>'previousSessionId' = ANY($4::text[])))
           AND ($5::text IS NULL OR left(key, length($5)) = $5)
         ORDER BY seq LIMIT 500`,
        [streams.harness, cursor, PUBLIC_TYPES, keys ? [...keys] : null, prefix],
      )) as Row[];
      return rows.map((r) => {
        const seq = Number(r.seq);
        return { cursor: encodeCursor(seq), stream: r.stream, seq, key: r.key, type: r.type, payload: r.payload, at: r.at };
      });
    },
    seen(event) {
      // A rotation of a followed session: follow its new id from here on.
      const previous = event.payload.previousSessionId;
      if (keys && event.type === 'SESSION_UPDATED' && typeof previous === 'string' && keys.has(previous)) keys.add(event.key);
    },
  });
}
