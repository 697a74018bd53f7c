import { parseInput, RequiresScope } from '@keelson/kit';
import { AUDIT_STREAM, type AuditPayload } from '@keelson/platform';
import { cursorSchema, type EventEnvelope } from '@keelson/schema';
import { Arg, Resolver, Root, Subscription } from 'type-graphql';
import type { IdentityContext } from '../context';
import { AuditEvent, toAuditEvent } from './auditEvent.type';

@Resolver(() => AuditEvent)
export class AuditResolver {
  @RequiresScope('admin')
  @Subscription(() => AuditEvent, {
    description:
      'The audit trail: one entry per mutation a subgraph answered and per rib tool a host ran (time, actor, operation, argument digest, outcome), in commit order — replays what followed `after` (from the first entry without it), then follows live. Admin only.',
    subscribe: ({ args, context }) => {
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      return (context as IdentityContext).events.tail(AUDIT_STREAM, after);
    },
  })
  auditEvents(@Root() event: EventEnvelope<AuditPayload>, @Arg('after', () => String, { nullable: true }) _after?: string | null): AuditEvent {
    return toAuditEvent(event);
  }
}
