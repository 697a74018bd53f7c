import { parseInput, RequiresScope } from '@keelson/kit';
import { cursorSchema, streams, type CapabilityChangePayload, type EventEnvelope } from '@keelson/schema';
import { Arg, Resolver, Root, Subscription } from 'type-graphql';
import type { SessionsContext } from '../context';
import { CapabilitiesChange, toCapabilitiesChange } from './capability.type';

@Resolver()
export class CapabilityResolver {
  @RequiresScope('read')
  @Subscription(() => CapabilitiesChange, {
    description:
      'Capability changes in commit order: a harness CLI appearing or disappearing, a rib activated or deactivated, the swarm bus up or down, the memory search mode changing. Each owning process compares its read field\'s own answer and records a change once; replays what followed `after`, then follows live.',
    subscribe: ({ args, context }) => {
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      return (context as SessionsContext).services.events.tail(streams.capabilities, after);
    },
  })
  capabilitiesChanged(@Root() event: EventEnvelope<CapabilityChangePayload>, @Arg('after', () => String, { nullable: true }) _after?: string | null): CapabilitiesChange {
    return toCapabilitiesChange(event);
  }
}
