import { asActor } from '../asActor';
import type { Actor } from '@keelson/schema';
import type { EventLog } from '@keelson/platform';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MeshError, streams, type OpFramePayload } from '@keelson/schema';
import type { Logger } from '@keelson/service';
import type { OpRecord, OpStore } from '@keelson/runs';
import { asActivity } from '../failures';
import type { OpContext, OpRegistry } from './opTypes';

export interface OpActivityDeps {
  store: OpStore;
  /** Steers reach a running op through the `ops` stream (its notifier must be able to LISTEN). */
  events: EventLog;
  registry: OpRegistry;
  log?: Logger;
}

/** The activities of the `durableOp` workflow. */
export function createOpActivities(deps: OpActivityDeps | undefined) {
  const need = (): OpActivityDeps => {
    if (!deps) throw ApplicationFailure.nonRetryable('this worker was started without an op store (ActivityDeps.ops)', 'SERVICE_UNAVAILABLE');
    return deps;
  };
  return {
    /** `OP_STARTED`, once. */
    async beginOp(input: { opId: string }): Promise<void> {
      await asActivity(() => need().store.beginOp(input.opId));
    },

    /**
     * Runs the op's implementation, heartbeating; log/progress frames are persisted in order and
     * steers are delivered from the `ops` stream. Success stores the result with `OP_SUCCEEDED`.
     * A throw fails the op (not retried); a lost worker is retried.
     */
    async runOp(input: { opId: string }): Promise<void> {
      return asActivity(async () => {
        const { store, events, registry } = need();
        const activity = Context.current();
        const op = await store.getOp(input.opId);
        if (!op) throw new MeshError('NOT_FOUND', `op ${JSON.stringify(input.opId)} does not exist`);
        const implementation = registry[op.kind];
        if (!implementation) {
          throw new MeshError('CAPABILITY_UNSUPPORTED', `op kind "${op.kind}" has no implementation on this worker (known: ${Object.keys(registry).join(', ') || 'none'})`);
        }

        const queue = opFrameQueue();
        const steering = followOpSteers(events, op, deps);

        const ctx: OpContext = {
          opId: op.id,
          kind: op.kind,
          input: op.input,
          signal: activity.cancellationSignal,
          log: (line) => queue.enqueue(() => store.log(op.id, line)),
          progress: (p) => queue.enqueue(() => store.progress(op.id, p)),
          onSteer: steering.onSteer,
        };
        const heartbeat = setInterval(() => activity.heartbeat(), 1000);
        let result: unknown;
        try {
          result = await implementation(ctx);
        } catch (err) {
          if (activity.cancellationSignal.aborted) throw new CancelledFailure(`op ${op.id} cancelled`);
          throw ApplicationFailure.create({ message: `op ${op.kind} failed: ${(err as Error).message ?? String(err)}`, type: 'UPSTREAM_FAILED', nonRetryable: true });
        } finally {
          clearInterval(heartbeat);
          await steering.close();
          await queue.drained();
        }
        if (activity.cancellationSignal.aborted) throw new CancelledFailure(`op ${op.id} cancelled`);
        const frameError = queue.error();
        if (frameError) throw frameError;
        await store.completeOp(op.id, result);
      });
    },

    /** Steer number `index`: `OP_STEERED`, once. */
    async recordSteer(input: { opId: string; index: number; note: string; actor?: Actor }): Promise<void> {
      await asActivity(() => need().store.recordSteer(input.opId, input.index, input.note, input.actor));
    },

    /** FAILED or CANCELLED with its frame, once. */
    async settleOp(input: { opId: string; status: 'FAILED' | 'CANCELLED'; error?: string; actor?: Actor }): Promise<boolean> {
      // A cancel's frame names who asked (the workflow carried them from its cancelledBy signal).
      return asActivity(() => asActor(input.actor, () => need().store.settleOp(input.opId, input.status, input.error)));
    },
  };
}

export type OpActivities = ReturnType<typeof createOpActivities>;

/** An op's log and progress frames, written one after another; the first failed write is kept. */
function opFrameQueue() {
  let frames: Promise<void> = Promise.resolve();
  let frameError: unknown;
  return {
    enqueue: (write: () => Promise<void>) => {
      frames = frames.then(write).catch((err: unknown) => {
        frameError ??= err;
      });
    },
    /** Settles once every frame enqueued so far is written (or failed). */
    drained: () => frames,
    /** The first write that failed, if any. */
    error: () => frameError,
  };
}

/**
 * A steerable op's notes, followed from the `ops` stream and handed to the implementation's
 * `onSteer` handler in order, one at a time (notes before a handler wait for it).
 */
function followOpSteers(events: EventLog, op: OpRecord, deps: OpActivityDeps | undefined) {
  let steerHandler: ((note: string) => void | Promise<void>) | undefined;
  const pendingNotes: string[] = [];
  let delivering: Promise<void> = Promise.resolve();
  const deliver = () => {
    while (steerHandler && pendingNotes.length) {
      const note = pendingNotes.shift()!;
      const handler = steerHandler;
      delivering = delivering.then(() => handler(note)).catch((err: unknown) => deps?.log?.warn({ err, opId: op.id }, 'onSteer threw'));
    }
  };
  const steers = op.steerable ? events.tail<OpFramePayload>(streams.ops, undefined, { key: op.id }) : undefined;
  const following = (async () => {
    if (!steers) return;
    for await (const frame of steers) {
      if (frame.type !== 'OP_STEERED' || frame.payload.note === undefined) continue;
      pendingNotes.push(frame.payload.note);
      deliver();
    }
  })().catch((err: unknown) => deps?.log?.warn({ err, opId: op.id }, 'following steers failed'));
  return {
    onSteer: (handler: (note: string) => void | Promise<void>) => {
      steerHandler = handler;
      deliver();
    },
    /** Stops following the stream, then waits for the follower and the notes being delivered. */
    async close() {
      await steers?.return?.();
      await following;
      await delivering;
    },
  };
}
