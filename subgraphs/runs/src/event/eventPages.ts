import type { EventEnvelope } from '@keelson/schema';
import type { DataSource } from 'typeorm';

interface EventRow {
  stream: string;
  seq: string;
  key: string;
  type: string;
  payload: unknown;
  at: Date;
}

/**
 * Up to `limit` events per key of one stream after `after`, oldest first, in one statement (the
 * event log's `events` table; cursors are the stream's, the same a subscription resumes from).
 */
export async function eventsByKeys<P>(dataSource: DataSource, stream: string, keys: readonly string[], after: number, limit: number): Promise<Map<string, EventEnvelope<P>[]>> {
  const rows = (await dataSource.query(
    `SELECT stream, seq, key, type, payload, at FROM (
       SELECT e.*, row_number() OVER (PARTITION BY e.key ORDER BY e.seq) AS rn
       FROM events e WHERE e.stream = $1 AND e.key = ANY($2::text[]) AND e.seq > $3
     ) x WHERE rn <= $4 ORDER BY key, seq`,
    [stream, [...keys], after, limit],
  )) as EventRow[];
  const out = new Map<string, EventEnvelope<P>[]>(keys.map((k) => [k, []]));
  for (const r of rows) {
    const seq = Number(r.seq);
    out.get(r.key)?.push({ cursor: String(seq), stream: r.stream, seq, key: r.key, type: r.type, payload: r.payload as P, at: r.at });
  }
  return out;
}
