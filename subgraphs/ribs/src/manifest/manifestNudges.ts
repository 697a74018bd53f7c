import type { EventLog } from '@keelson/platform';
import type { ManifestInvalidation as HostInvalidation, RibHost } from '@keelson/host';
import { encodeCursor, streams, type EventEnvelope, type ManifestInvalidationReason } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { DataSource } from 'typeorm';

/** Ids only, like every event. */
export interface ManifestEventPayload {
  ribId: string;
  reason: ManifestInvalidationReason;
}

/**
 * Turns the host's manifest nudges (`registerRegion`, its unregister handle, `invalidateManifest`)
 * into events on the `manifest` stream, so `manifestInvalidated` reaches every client of every
 * process that serves the subscription and survives a dropped socket (resume with `after`).
 */
export class ManifestNudges {
  /** The last queued write: nudges are written one after another, so the stream keeps their order. */
  private last: Promise<void> = Promise.resolve();
  private detach: (() => void) | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly events: EventLog,
    private readonly log: Logger,
  ) {}

  /** Starts recording the host's nudges. */
  attach(host: Pick<RibHost, 'onManifestInvalidated'>): void {
    this.detach = host.onManifestInvalidated((nudge) => this.record(nudge));
  }

  /**
   * Appends one nudge after the ones already queued (a region registered then unregistered must
   * not reach clients the other way round); settles once committed. Failures are logged.
   */
  record(nudge: Pick<HostInvalidation, 'ribId' | 'reason'>): Promise<void> {
    const write = this.last.then(() =>
      this.dataSource
        .transaction((m) =>
          this.events.append<ManifestEventPayload>(m, { stream: streams.manifest, key: nudge.ribId, type: nudge.reason, payload: { ribId: nudge.ribId, reason: nudge.reason } }),
        )
        .then(
          () => undefined,
          (err: unknown) => this.log.warn({ err, ribId: nudge.ribId }, 'could not record a manifest invalidation'),
        ),
    );
    this.last = write;
    return write;
  }

  /** Stops recording and waits for nudges already queued (before the database closes). */
  async stop(): Promise<void> {
    this.detach?.();
    await this.last;
  }

  /**
   * The nudges after `after`, then live. Without a cursor it starts at the stream's current end: a
   * nudge only says "re-fetch now", so a new client has nothing to catch up on.
   */
  async tail(after: string | null | undefined): Promise<AsyncIterableIterator<EventEnvelope<ManifestEventPayload>>> {
    if (after != null) return this.events.tail<ManifestEventPayload>(streams.manifest, after);
    const rows = (await this.dataSource.query('SELECT last_seq FROM event_streams WHERE stream = $1', [streams.manifest])) as { last_seq: string }[];
    return this.events.tail<ManifestEventPayload>(streams.manifest, encodeCursor(Number(rows[0]?.last_seq ?? 0)));
  }
}
