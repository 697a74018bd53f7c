import { parseInput, RequiresScope } from '@keelson/kit';
import { cursorSchema, isUuid, MeshError, streams, type EventEnvelope, type SwarmEventPayload } from '@keelson/schema';
import { Arg, ID, Resolver, Root, Subscription } from 'type-graphql';
import type { SwarmsContext } from '../context';
import { swarmsLoaders } from '../context';
import { SwarmEvent, toSwarmEvent } from './swarmEvent.type';

@Resolver()
export class SwarmEventResolver {
  @RequiresScope('read')
  @Subscription(() => SwarmEvent, {
    description:
      "One swarm's events (or every swarm's), from the mesh's own event log: replays what followed `after`, then follows live, nothing missed and nothing twice. Ids only: read bodies through Swarm.messages and Swarm.thread.",
    subscribe: async ({ args, context }) => {
      const ctx = context as SwarmsContext;
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      const swarmId = args.swarmId as string | null | undefined;
      if (swarmId != null && (!isUuid(swarmId) || !(await swarmsLoaders(ctx).swarm.load(swarmId)))) throw new MeshError('NOT_FOUND', `swarm ${JSON.stringify(swarmId)} does not exist`);
      return ctx.services.events.tail(streams.swarms, after, swarmId ? { key: swarmId } : {});
    },
  })
  swarmEvents(
    @Root() event: EventEnvelope<SwarmEventPayload>,
    @Arg('swarmId', () => ID, { nullable: true }) _swarmId?: string | null,
    @Arg('after', () => String, { nullable: true }) _after?: string | null,
  ): typeof SwarmEvent {
    return toSwarmEvent(event) as typeof SwarmEvent;
  }
}
