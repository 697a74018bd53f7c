import { parseInput, RequiresScope } from '@keelson/kit';
import type { EventEnvelope } from '@keelson/schema';
import { Arg, ID, Resolver, Root, Subscription } from 'type-graphql';
import { z } from 'zod';
import type { SessionsContext } from '../context';
import { HarnessEvent, toEventObject } from './harnessEvent.type';

const argsSchema = z.object({
  sessionId: z.string().min(1).max(2048).nullish(),
  harnessId: z.string().min(1).max(64).nullish(),
  after: z.string().nullish(),
});

@Resolver(() => HarnessEvent)
export class HarnessEventResolver {
  @RequiresScope('read')
  @Subscription(() => HarnessEvent, {
    description:
      "Harness events in commit order: one session's (following a rotation to its new id), one harness's, or all. Replays what followed `after`, then follows live — nothing missed, nothing twice.",
    subscribe: async ({ args, context }) => {
      const a = parseInput(argsSchema, args, 'args');
      return (context as SessionsContext).services.plane.tail({ sessionId: a.sessionId ?? null, harnessId: a.harnessId ?? null }, a.after ?? null);
    },
  })
  harnessEvents(
    @Root() event: EventEnvelope<Record<string, unknown>>,
    @Arg('sessionId', () => ID, { nullable: true }) _sessionId?: string | null,
    @Arg('harnessId', () => ID, { nullable: true }) _harnessId?: string | null,
    @Arg('after', () => String, { nullable: true }) _after?: string | null,
  ): HarnessEvent {
    return toEventObject(event);
  }
}
