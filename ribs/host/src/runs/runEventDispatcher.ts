import type { RibRunEvent } from '@keelson/ribs-contract';
import type { ActiveRib } from '../activation/activeRib';
import { errorMessage } from '../errors';
import type { WarningSink } from '../warnings';

/**
 * Delivers run-lifecycle events to `onRunEvent`: fail-soft (a throwing or rejecting hook is caught
 * and warned about, never affecting the run) and serialized per rib and run, so a slow handler
 * settles before the next event's invocation starts.
 */
export class RunEventDispatcher {
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly warn: WarningSink) {}

  /** Resolves once this event's invocation settled (never rejects). */
  deliver(active: ActiveRib, event: RibRunEvent): Promise<void> {
    const { rib, ctx, id } = active;
    if (typeof rib.onRunEvent !== 'function') return Promise.resolve();
    const key = `${id}\u0000${event.runId}`;
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(async () => {
      try {
        await rib.onRunEvent!(event, ctx);
      } catch (err) {
        this.warn({ stage: 'runtime', rule: 'run-event', ribId: id, message: `onRunEvent(${event.runId}, ${event.status}) threw: ${errorMessage(err)}` });
      }
    });
    this.tails.set(key, next);
    void next.then(() => {
      if (this.tails.get(key) === next) this.tails.delete(key);
    });
    return next;
  }
}
