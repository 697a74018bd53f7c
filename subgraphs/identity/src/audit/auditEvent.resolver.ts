import { auditRecordOf, type EventLog } from '@keelson/platform';
import { pageArgsSchema, pageOf, parseInput, RequiresScope } from '@keelson/kit';
import { streams, type AuditPayload, type EventEnvelope } from '@keelson/schema';
import { Arg, Ctx, Int, Query, Resolver } from 'type-graphql';
import type { IdentityContext } from '../context';
import { AuditEvent, AuditEventConnection } from './auditEvent.type';

/** What the audit stream's event is as `AuditEvent`. */
function auditEventOf(event: EventEnvelope<AuditPayload>): AuditEvent {
  const record = auditRecordOf(event);
  return {
    cursor: record.cursor,
    at: new Date(record.at),
    type: record.type,
    actor: record.actor?.subject ?? null,
    actorKind: record.actor?.kind ?? null,
    operation: record.operation,
    argsSha256: record.argsSha256,
    outcome: record.outcome,
    detail: record.detail ?? null,
    service: record.service,
  };
}

/** Reads the audit stream a page at a time. */
export async function auditPage(events: EventLog, after: number | null, first: number): Promise<AuditEventConnection> {
  const rows = (await events.read<AuditPayload>(streams.audit, after ?? 0, { limit: first + 1 })) as EventEnvelope<AuditPayload>[];
  return pageOf(rows.map(auditEventOf), first, (e) => e.cursor);
}

@Resolver()
export class AuditEventResolver {
  @Query(() => AuditEventConnection, {
    description:
      'The audit log (admin): one entry per mutation through the gateway and per rib tool call, oldest first — time, actor, operation, argument digest, outcome. Resume with `after` (an entry\'s cursor). Also written to `<workspace>/.data/audit/<date>.jsonl`.',
  })
  @RequiresScope('admin')
  auditEvents(
    @Ctx() ctx: IdentityContext,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
  ): Promise<AuditEventConnection> {
    const page = parseInput(pageArgsSchema, { after, first });
    return auditPage(ctx.events, page.after, page.first);
  }
}
