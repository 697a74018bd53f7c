/** One persisted version of a snapshot key. */
export interface SnapshotRecord<T = unknown> {
  key: string;
  /** Starts at 1 and increases by one per append. */
  version: number;
  payload: T;
  /** ISO-8601. */
  composedAt: string;
  /** The rib that owns the key. */
  ribId: string;
  /** The event-log cursor of the frame, when the store has one. */
  cursor?: string;
}

/** A new version to persist. */
export interface SnapshotAppend {
  key: string;
  ribId: string;
  /** Plain JSON. */
  payload: unknown;
  composedAt: string;
}

/**
 * Where snapshot versions live. The subgraph implements it on Postgres: `append` assigns the next
 * version, persists it and publishes its frame (an event-log row) in one transaction, so every
 * version is an event and concurrent writers (the ribs subgraph and the worker both run ribs)
 * never reuse a version.
 */
export interface SnapshotStore {
  /** Persists the next version of `key` and publishes its frame, atomically. */
  append(next: SnapshotAppend): Promise<SnapshotRecord>;
  /** The latest version of `key`, or undefined. */
  latest(key: string): Promise<SnapshotRecord | undefined>;
}
