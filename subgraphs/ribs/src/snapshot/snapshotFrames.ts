import type { EventLog } from '@keelson/platform';
import { encodeCursor, streams, type EventEnvelope, type SnapshotEventPayload } from '@keelson/schema';
import type { PgSnapshotStore } from './pgSnapshotStore';
import { SnapshotFrame } from './snapshot.type';

function frameOf(fields: Omit<SnapshotFrame, 'loaded'>, loaded?: SnapshotFrame['loaded']): SnapshotFrame {
  return Object.assign(new SnapshotFrame(), fields, loaded === undefined ? {} : { loaded });
}

/**
 * The frames of `keys`, in stream order, as one resumable position on the `snapshots` stream.
 *
 * With `after`, every version of those keys published after it, then live. Without, first the
 * latest version of each key (at one consistent stream position, oldest first), then everything
 * after that position: a fresh board needs the current payload, not the key's history. Either way
 * no frame is skipped or repeated, and a client that resumes with its last cursor misses nothing.
 * Live events carry ids only; each frame's payload is read from the version table.
 */
export class SnapshotFrameStream implements AsyncIterableIterator<SnapshotFrame> {
  private initial: SnapshotFrame[] = [];
  private tail: AsyncIterableIterator<EventEnvelope<SnapshotEventPayload>> | undefined;
  private started = false;
  private finished = false;

  constructor(
    private readonly store: PgSnapshotStore,
    private readonly events: EventLog,
    private readonly keys: ReadonlySet<string>,
    private readonly after: string | null | undefined,
  ) {}

  async next(): Promise<IteratorResult<SnapshotFrame>> {
    if (!this.started) {
      this.started = true;
      await this.begin();
    }
    while (!this.finished) {
      const first = this.initial.shift();
      if (first) return { value: first, done: false };
      const step = await this.tail!.next();
      if (step.done) break;
      const event = step.value;
      if (!this.keys.has(event.key)) continue;
      return {
        value: frameOf({ cursor: event.cursor, key: event.payload.key, version: event.payload.version, ribId: event.payload.ribId, at: event.at }),
        done: false,
      };
    }
    return this.return();
  }

  async return(): Promise<IteratorResult<SnapshotFrame>> {
    this.finished = true;
    this.initial = [];
    await this.tail?.return?.();
    return { value: undefined, done: true };
  }

  async throw(err: unknown): Promise<IteratorResult<SnapshotFrame>> {
    await this.return();
    throw err;
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<SnapshotFrame> {
    return this;
  }

  private async begin(): Promise<void> {
    let from = this.after ?? undefined;
    if (from === undefined) {
      const { head, records } = await this.store.latestWithHead([...this.keys]);
      this.initial = records.map((r) =>
        frameOf(
          { cursor: r.cursor!, key: r.key, version: r.version, ribId: r.ribId, at: r.publishedAt ?? new Date(r.composedAt) },
          { payload: r.payload, composedAt: r.composedAt },
        ),
      );
      from = encodeCursor(head);
    }
    this.tail = this.events.tail<SnapshotEventPayload>(streams.snapshots, from);
    // A return() that landed while the first read ran must still end the tail it did not see.
    if (this.finished) await this.tail.return?.();
  }
}
