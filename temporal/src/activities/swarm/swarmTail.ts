import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { BusFailure } from '@keelson/rib-swarm';
import type { ClickClackClient } from '@keelson/swarms';
import { swarmMessages, type SwarmBusEventSignal } from '@keelson/schema';
import { busFailure, type SwarmContext } from './swarmContext';

/** The `swarmTail` activity over the shared swarm context. */
export function swarmTailActivity(c: SwarmContext) {
  const { need, owner, recover } = c;

  /**
   * Follows the workspace's realtime socket from `afterCursor` (or the last heartbeated cursor of an
   * earlier attempt) and signals `swarmBusEvent` for every `message.created` and
   * `thread.reply_created` of the swarm's channel, in order, ids only. Runs until cancelled. A
   * dropped socket fails the attempt (Temporal retries it from the heartbeated cursor, and the
   * workflow drops what it already saw); 4001 resyncs from the tail after re-announcing the
   * channel's messages; a rejected credential (401/403, 1008) is final.
   */
  return async function swarmTail(input: { swarmId: string; workflowId: string; workspaceId: string; channelId: string; afterCursor?: string }): Promise<void> {
    const activity = Context.current();
    const details = activity.info.heartbeatDetails as { cursor?: string } | undefined;
    let cursor = details?.cursor ?? input.afterCursor;
    const handle = activity.client.workflow.getHandle(input.workflowId);
    const signal = (e: SwarmBusEventSignal) => handle.signal(swarmMessages.busEvent, e);
    const beat = setInterval(() => activity.heartbeat({ cursor }), 1000);
    try {
      for (;;) {
        let client: ClickClackClient;
        try {
          client = await owner();
        } catch (err) {
          await recover(err);
          return busFailure(err, 'tail');
        }
        let chain: Promise<void> = Promise.resolve();
        let failed: unknown;
        const sub = client.subscribe(input.workspaceId, cursor, (event) => {
          chain = chain.then(async () => {
            if (failed || !event.cursor) return;
            if (event.channelId === input.channelId && (event.type === 'message.created' || event.type === 'thread.reply_created')) {
              const messageId = typeof event.payload.message_id === 'string' ? event.payload.message_id : undefined;
              if (messageId) {
                const rootId = typeof event.payload.root_message_id === 'string' ? event.payload.root_message_id : undefined;
                await signal({ eventId: event.id, cursor: event.cursor, type: event.type, messageId, ...(rootId ? { rootId } : {}) });
              }
            }
            cursor = event.cursor;
            activity.heartbeat({ cursor });
          }).catch((err: unknown) => {
            failed ??= err;
            sub.close();
          });
        });
        const cancelled = new Promise<'cancelled'>((resolve) => activity.cancellationSignal.addEventListener('abort', () => resolve('cancelled'), { once: true }));
        const outcome = await Promise.race([sub.closed, cancelled]);
        sub.close();
        await chain;
        if (outcome === 'cancelled') throw new CancelledFailure('the swarm tail was cancelled');
        if (failed) throw failed;
        if (outcome.status === 401 || outcome.status === 403 || outcome.code === 1008) {
          need().bus.invalidateOwner();
          throw ApplicationFailure.create({ type: 'UPSTREAM_FAILED', message: `ClickClack credential revoked: the realtime socket closed (${outcome.status ?? outcome.code} ${outcome.reason})`, nonRetryable: true });
        }
        if (outcome.code === 4001) {
          // Resync: take the tail now, re-announce every message of the channel (the workflow keeps
          // only what it has not seen), then follow from the tail.
          const tail = await client.tailCursor(input.workspaceId);
          await reannounceChannel(client, input.channelId, () => cursor ?? '', signal);
          cursor = tail;
          activity.heartbeat({ cursor });
          continue;
        }
        await recover(new BusFailure(outcome.reason, false));
        throw ApplicationFailure.create({ type: 'SERVICE_UNAVAILABLE', message: `the realtime socket closed (${outcome.code} ${outcome.reason}); reconnecting from ${cursor ?? 'the start'}` });
      }
    } finally {
      clearInterval(beat);
    }
  };
}

/** Signals every message of the channel, roots then each root's replies, page by page, at the tail's current cursor. */
async function reannounceChannel(client: ClickClackClient, channelId: string, cursor: () => string, signal: (e: SwarmBusEventSignal) => Promise<void>): Promise<void> {
  let after = 0;
  for (;;) {
    const page = await client.listMessages(channelId, { afterSeq: after, limit: 200 });
    for (const root of page.messages) {
      await signal({ eventId: '', cursor: cursor(), type: 'message.created', messageId: root.id });
      if (root.replyCount > 0) {
        const thread = await client.getThread(root.id, { latest: true, limit: 200 });
        for (const r of thread.replies) await signal({ eventId: '', cursor: cursor(), type: 'thread.reply_created', messageId: r.id, rootId: root.id });
      }
    }
    if (!page.hasNewer || page.newestSeq === null) break;
    after = page.newestSeq;
  }
}
