// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
import {
  allHandlersFinished,
  ApplicationFailure,
  condition,
  continueAsNew,
  proxyActivities,
  setHandler,
  uuid4,
  workflowInfo,
} from '@temporalio/workflow';
import {
  sessionSteerLimits,
  utf8Bytes,
  type SessionSteerAnswer,
  type SessionSteerInput,
  type SessionSteerItem,
  type SessionSteerState,
} from '@keelson/schema';
import type { Activities } from '../activities';
import { PERMANENT_TURN_FAILURES } from './harnessTask';
import { sessionSteerStatusQuery, sessionSteerUpdate } from './sessionSteerMessages';

/**
 * A session's steers (`workflowTypes.sessionSteer`, id `session-steer-<sessionId>`), each run in
 * order as the session's next turn. The `sessionSteer` Update takes a text (rejected when empty,
 * too long, or when `sessionSteerLimits.queued` wait); the `sessionSteerTurn` activity runs it as
 * soon as the session holds no turn — while another turn holds the session it fails TURN_IN_FLIGHT
 * and Temporal retries it with backoff — with the steer's id as the turn id, so a retry after a
 * worker crash never runs a steer twice. A drained queue waits `sessionSteerLimits.idleMs` for
 * another steer, then ends; the next steer starts the workflow again. Continues as new, carrying
 * what waits, before its history grows large.
 */
export async function sessionSteer(input: SessionSteerInput): Promise<{ delivered: number }> {
  const { sessionSteerTurn } = proxyActivities<Activities>({
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: input.heartbeatTimeoutMs ?? 30_000,
    // A steer waits for the running turn through these retries: quick at first, then every 10 s.
    retry: { initialInterval: '1 second', backoffCoefficient: 1.5, maximumInterval: '10 seconds', nonRetryableErrorTypes: PERMANENT_TURN_FAILURES },
    scheduleToCloseTimeout: '6 hours',
  });

  const queue: SessionSteerItem[] = [...(input.pending ?? [])];
  let running: string | null = null;
  let delivered = input.delivered ?? 0;

  setHandler(
    sessionSteerUpdate,
    ({ text, actor }): SessionSteerAnswer => {
      const item: SessionSteerItem = { steerId: uuid4(), text, ...(actor ? { actor } : {}) };
      queue.push(item);
      return { steerId: item.steerId, position: queue.length };
    },
    {
      validator: ({ text }) => {
        if (typeof text !== 'string' || !text.trim()) throw ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: 'text: must not be empty', nonRetryable: true });
        if (utf8Bytes(text) > sessionSteerLimits.textBytes) {
          throw ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: `text: must be at most ${sessionSteerLimits.textBytes} bytes`, nonRetryable: true });
        }
        if (queue.length >= sessionSteerLimits.queued) {
          throw ApplicationFailure.create({
            type: 'CONFLICT',
            message: `session ${input.sessionId} has ${queue.length} steers waiting (at most ${sessionSteerLimits.queued}); steer again once one has run`,
            nonRetryable: true,
          });
        }
      },
    },
  );
  setHandler(sessionSteerStatusQuery, (): SessionSteerState => ({ sessionId: input.sessionId, queued: [...queue], running, delivered }));

  for (;;) {
    while (queue.length) {
      const next = queue[0]!;
      running = next.steerId;
      try {
        await sessionSteerTurn({ sessionId: input.sessionId, steerId: next.steerId, text: next.text, ...(next.actor ? { actor: next.actor } : {}) });
      } catch {
        // The failure is on the session's stream (its TurnComplete, or the refusal the activity met);
        // the queue goes on with the next steer.
      }
      running = null;
      queue.shift();
      delivered += 1;
      if (workflowInfo().continueAsNewSuggested) {
        await condition(allHandlersFinished);
        await continueAsNew<typeof sessionSteer>({ ...input, pending: [...queue], delivered });
      }
    }
    const more = await condition(() => queue.length > 0, sessionSteerLimits.idleMs);
    if (!more) {
      // Updates admitted while this run decides to end are still answered, and run before it ends.
      await condition(allHandlersFinished);
      if (!queue.length) return { delivered };
    }
  }
}
