import { parseInput, RequiresScope } from '@keelson/kit';
import { cursorSchema, type EventEnvelope } from '@keelson/schema';
import { Arg, Resolver, Root, Subscription } from 'type-graphql';
import type { RibsContext } from '../context';
import type { ManifestEventPayload } from './manifestNudges';
import { ManifestInvalidation, reasonOf } from './manifestInvalidation.type';

@Resolver(() => ManifestInvalidation)
export class ManifestResolver {
  @RequiresScope('read')
  @Subscription(() => ManifestInvalidation, {
    description:
      "Nudges to re-fetch the manifest: a rib registered or removed a region at runtime, or changed a descriptor. Without `after` it starts now; with the last cursor you saw it resumes with nothing missed.",
    subscribe: async ({ args, context }) => {
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      return (context as RibsContext).services.manifest.tail(after);
    },
  })
  manifestInvalidated(
    @Root() event: EventEnvelope<ManifestEventPayload>,
    @Arg('after', () => String, { nullable: true }) _after?: string | null,
  ): ManifestInvalidation {
    return Object.assign(new ManifestInvalidation(), { cursor: event.cursor, ribId: event.payload.ribId, reason: reasonOf(event.payload.reason), at: event.at });
  }
}
