import type { EventLog } from '@keelson/platform';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { HOLDER_STOPPED, streams, type OpFramePayload, type RefreshOutcome } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { OpStore } from '@keelson/runs';
import { asActivity } from '../failures';

/** How a held op ended on the rib's side. */
export type HeldOpOutcome =
  | { status: 'succeeded'; result: unknown }
  | { status: 'failed'; error: string }
  /** The registering process is going away (orderly shutdown): the op fails honestly. */
  | { status: 'stopped'; error: string };

/** One op a rib registered in this process, as its live registry exposes it to the holder activity. */
export interface HeldOp {
  readonly steerable: boolean;
  /** Settles once the rib called done/error (after its frames were written) or the process stopped it. */
  readonly outcome: Promise<HeldOpOutcome>;
  /** Aborts the rib's `handle.signal` with this reason; later done/error calls are ignored. */
  cancel(reason: string): void;
  /** Hands a steering note to the rib's `onSteer` (serialized: a slow handler holds the next). */
  steer(note: string): Promise<void>;
}

/** `refreshRegion`'s argument: one region of one rib. */
export interface RefreshRegionInput {
  key: string;
  ribId: string;
  /** The catalog workflow the refresh re-runs; absent, the key's composer recomposes. */
  workflow?: string;
}

/** What the activities of a ribs process reach (its live op registry, its rib host). */
export interface RibActivityDeps {
  /** Writes `OP_SUCCEEDED` with the result, once. */
  store: Pick<OpStore, 'completeOp'>;
  /** Steers reach a held op through the `ops` stream. */
  events: EventLog;
  /** The op registered in this process under that id, if it still is. */
  heldOp(opId: string): HeldOp | undefined;
  /** Refreshes one region now (run its workflow and publish, or recompose its key). */
  refreshRegion(input: RefreshRegionInput, signal: AbortSignal): Promise<RefreshOutcome>;
  log?: Logger;
}

const stopped = (message: string) => ApplicationFailure.create({ type: 'SERVICE_UNAVAILABLE', message, nonRetryable: true });

/**
 * The activities a ribs process serves on its own task queue (`<task queue>.ribs.<instance>`): only
 * that process can run them, so Temporal's heartbeat timeout is how a `ribOp` learns the process died.
 */
export function createRibActivities(deps: RibActivityDeps) {
  return {
    /**
     * Holds a rib op while the rib works in this process: heartbeats, forwards recorded steers to
     * `onSteer`, turns a cancel into an aborted `handle.signal`, and settles with the rib's outcome
     * (`OP_SUCCEEDED` with the result here; a failure fails the activity, non-retryably).
     */
    async holdRibOp(input: { opId: string }): Promise<void> {
      const activity = Context.current();
      const held = deps.heldOp(input.opId);
      if (!held) throw stopped(`${HOLDER_STOPPED}: op ${input.opId} is no longer held by its process (it restarted)`);
      activity.heartbeat();
      const heartbeat = setInterval(() => activity.heartbeat(), 1000);
      const steers = held.steerable ? deps.events.tail<OpFramePayload>(streams.ops, undefined, { key: input.opId }) : undefined;
      const following = (async () => {
        if (!steers) return;
        for await (const frame of steers) {
          if (frame.type === 'OP_STEERED' && frame.payload.note !== undefined) await held.steer(frame.payload.note);
        }
      })().catch((err: unknown) => deps.log?.warn({ err, opId: input.opId }, 'following steers failed'));
      const signal = activity.cancellationSignal;
      const cancelled = new Promise<'cancelled'>((resolve) => {
        if (signal.aborted) resolve('cancelled');
        else signal.addEventListener('abort', () => resolve('cancelled'), { once: true });
      });
      let outcome: HeldOpOutcome | 'cancelled';
      try {
        outcome = await Promise.race([held.outcome, cancelled]);
      } finally {
        clearInterval(heartbeat);
        await steers?.return?.();
        await following;
      }
      if (outcome === 'cancelled') {
        const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? '');
        if (reason === 'WORKER_SHUTDOWN') {
          held.cancel(HOLDER_STOPPED);
          throw stopped(HOLDER_STOPPED);
        }
        held.cancel('cancelled by request');
        throw new CancelledFailure(`op ${input.opId} cancelled`);
      }
      if (outcome.status === 'stopped') throw stopped(outcome.error);
      if (outcome.status === 'failed') throw ApplicationFailure.create({ type: 'UPSTREAM_FAILED', message: outcome.error, nonRetryable: true });
      const result = outcome.result;
      await asActivity(() => deps.store.completeOp(input.opId, result));
    },

    /** One heartbeat tick of a region: heartbeats while the refresh runs; a cancel aborts it. */
    async refreshRegion(input: RefreshRegionInput): Promise<RefreshOutcome> {
      const activity = Context.current();
      activity.heartbeat();
      const heartbeat = setInterval(() => activity.heartbeat(), 1000);
      try {
        return await deps.refreshRegion(input, activity.cancellationSignal);
      } finally {
        clearInterval(heartbeat);
      }
    },
  };
}

export type RibActivities = ReturnType<typeof createRibActivities>;
