import type { SnapshotAppend, SnapshotRecord, SnapshotStore } from '../ports/snapshotStore';

/** A process-local `SnapshotStore` (tests and embedders); `frames` lists every append in order. */
export class InMemorySnapshotStore implements SnapshotStore {
  readonly frames: SnapshotRecord[] = [];
  private readonly latestByKey = new Map<string, SnapshotRecord>();

  async append(next: SnapshotAppend): Promise<SnapshotRecord> {
    const version = (this.latestByKey.get(next.key)?.version ?? 0) + 1;
    const record: SnapshotRecord = { ...next, version, cursor: String(this.frames.length + 1) };
    this.latestByKey.set(next.key, record);
    this.frames.push(record);
    return record;
  }

  async latest(key: string): Promise<SnapshotRecord | undefined> {
    return this.latestByKey.get(key);
  }
}
