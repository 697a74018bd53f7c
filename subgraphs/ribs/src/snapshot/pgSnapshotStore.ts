import type { EventLog } from '@keelson/platform';
import type { SnapshotAppend, SnapshotRecord, SnapshotStore } from '@keelson/host';
import { encodeCursor, SNAPSHOT_PUBLISHED, streams, type SnapshotEventPayload } from '@keelson/schema';
import type { DataSource } from 'typeorm';

/** Versions kept per key; older ones are pruned when a new one lands (their events stay, hydrating as no payload). @default 100 */
export const DEFAULT_RETAINED_VERSIONS = 100;

interface VersionRow {
  key: string;
  version: number;
  rib_id: string;
  payload: unknown;
  composed_at: Date;
  event_seq: string;
}

function toRecord(row: VersionRow): SnapshotRecord {
  return {
    key: row.key,
    version: Number(row.version),
    ribId: row.rib_id,
    payload: row.payload,
    composedAt: new Date(row.composed_at).toISOString(),
    cursor: encodeCursor(Number(row.event_seq)),
  };
}

const COLUMNS = 'key, version, rib_id, payload, composed_at, event_seq';

/**
 * The `SnapshotStore` on Postgres. `append` takes the key's head row lock (so versions never repeat,
 * whichever process writes), stores the version, and appends its `snapshots` event, all in one
 * transaction: a version exists if and only if its frame was published.
 */
export class PgSnapshotStore implements SnapshotStore {
  constructor(
    private readonly dataSource: DataSource,
    private readonly events: EventLog,
    private readonly retain = DEFAULT_RETAINED_VERSIONS,
  ) {}

  async append(next: SnapshotAppend): Promise<SnapshotRecord> {
    return this.dataSource.transaction(async (m) => {
      const [head] = (await m.query(
        `INSERT INTO rib_snapshot_heads (key, rib_id, version) VALUES ($1, $2, 1)
         ON CONFLICT (key) DO UPDATE SET version = rib_snapshot_heads.version + 1, rib_id = EXCLUDED.rib_id
         RETURNING version`,
        [next.key, next.ribId],
      )) as { version: number }[];
      const version = Number(head!.version);
      const event = await this.events.append<SnapshotEventPayload>(m, {
        stream: streams.snapshots,
        key: next.key,
        type: SNAPSHOT_PUBLISHED,
        payload: { key: next.key, version, ribId: next.ribId },
      });
      const [row] = (await m.query(
        `INSERT INTO rib_snapshot_versions (${COLUMNS}) VALUES ($1, $2, $3, $4::jsonb, $5, $6) RETURNING ${COLUMNS}`,
        [next.key, version, next.ribId, JSON.stringify(next.payload ?? null), next.composedAt, event.seq],
      )) as VersionRow[];
      if (version > this.retain) {
        await m.query('DELETE FROM rib_snapshot_versions WHERE key = $1 AND version <= $2', [next.key, version - this.retain]);
      }
      return toRecord(row!);
    });
  }

  async latest(key: string): Promise<SnapshotRecord | undefined> {
    const rows = (await this.dataSource.query(
      `SELECT ${COLUMNS.split(', ').map((c) => `v.${c}`).join(', ')} FROM rib_snapshot_heads h
       JOIN rib_snapshot_versions v ON v.key = h.key AND v.version = h.version WHERE h.key = $1`,
      [key],
    )) as VersionRow[];
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  /** The latest version of each key, one statement (a request's loader batches through it). */
  async latestOf(keys: readonly string[]): Promise<SnapshotRecord[]> {
    if (keys.length === 0) return [];
    const rows = (await this.dataSource.query(
      `SELECT ${COLUMNS.split(', ').map((c) => `v.${c}`).join(', ')} FROM rib_snapshot_heads h
       JOIN rib_snapshot_versions v ON v.key = h.key AND v.version = h.version WHERE h.key = ANY($1::text[])`,
      [[...keys]],
    )) as VersionRow[];
    return rows.map(toRecord);
  }

  /** Stored versions by `(key, version)`; pruned ones are absent. */
  async versions(refs: readonly { key: string; version: number }[]): Promise<SnapshotRecord[]> {
    if (refs.length === 0) return [];
    const rows = (await this.dataSource.query(
      `SELECT ${COLUMNS} FROM rib_snapshot_versions
       WHERE (key, version) IN (SELECT * FROM unnest($1::text[], $2::int[]))`,
      [refs.map((r) => r.key), refs.map((r) => r.version)],
    )) as VersionRow[];
    return rows.map(toRecord);
  }

  /**
   * The latest version of each key at one consistent point, and that point: the `snapshots` stream
   * position every returned version is at or before. A subscriber sends these, then follows the
   * stream from `head`, and misses nothing.
   */
  async latestWithHead(keys: readonly string[]): Promise<{ head: number; records: (SnapshotRecord & { publishedAt?: Date })[] }> {
    // One statement reads one snapshot: a version and its event commit together, and stream
    // sequences commit in order, so every version at or before `head` is visible here.
    const rows = (await this.dataSource.query(
      `WITH h AS (SELECT COALESCE((SELECT last_seq FROM event_streams WHERE stream = $1), 0) AS head)
       SELECT h.head, v.key, v.version, v.rib_id, v.payload, v.composed_at, v.event_seq, e.at AS published_at
       FROM h LEFT JOIN rib_snapshot_heads s ON s.key = ANY($2::text[])
       LEFT JOIN rib_snapshot_versions v ON v.key = s.key AND v.version = s.version
       LEFT JOIN events e ON e.stream = $1 AND e.seq = v.event_seq`,
      [streams.snapshots, [...keys]],
    )) as (VersionRow & { head: string; published_at: Date | null })[];
    const head = Number(rows[0]?.head ?? 0);
    const records = rows
      .filter((r) => r.key !== null && Number(r.event_seq) <= head)
      .map((r) => ({ ...toRecord(r), ...(r.published_at ? { publishedAt: new Date(r.published_at) } : {}) }))
      .sort((a, b) => Number(a.cursor) - Number(b.cursor));
    return { head, records };
  }
}
