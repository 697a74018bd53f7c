import type { AuditPayload } from '@keelson/platform';
import type { EventEnvelope } from '@keelson/schema';
import { Field, ObjectType } from 'type-graphql';

@ObjectType({ description: 'One audit entry: a mutation a subgraph answered, or a rib tool a host ran.' })
export class AuditEvent {
  @Field({ description: 'Opaque; pass as `after` to resume right after this entry.' })
  cursor!: string;

  @Field(() => Date)
  at!: Date;

  @Field({ description: '`MUTATION` or `TOOL`.' })
  kind!: string;

  @Field({ description: 'The mutation\'s root field, or the tool\'s name.' })
  operation!: string;

  @Field({ description: 'sha256 (hex) of the arguments\' canonical JSON: comparable, never the values.' })
  argsDigest!: string;

  @Field({ description: '`OK`, or the error code (`FORBIDDEN`, `CONFLICT`, …; tools: `POLICY_DENIED`, `TOOL_ERROR`, `TIMEOUT`, …).' })
  outcome!: string;

  @Field({ description: 'The process that recorded it (a subgraph\'s name, or `worker`).' })
  service!: string;

  @Field(() => String, { nullable: true, description: 'Tools: the policy surface the call came through (`workflow`, `mcp`, `chat`, …).' })
  surface!: string | null;

  @Field(() => String, { nullable: true, description: 'Who asked (a token id, a JWT issuer and subject, a service); null for the mesh\'s own work.' })
  actor!: string | null;

  @Field(() => String, { nullable: true, description: 'The actor\'s stable key: `token:<id>`, `jwt:<subject>`, `device:<name>`, `service:<name>` — two tokens with one name differ here.' })
  actorKey!: string | null;

  @Field(() => String, { nullable: true, description: 'The actor\'s kind: `token`, `jwt`, `device` or `service`.' })
  actorKind!: string | null;
}

export function toAuditEvent(e: EventEnvelope<AuditPayload>): AuditEvent {
  return Object.assign(new AuditEvent(), {
    cursor: e.cursor,
    at: e.at,
    kind: e.type,
    operation: e.payload.operation,
    argsDigest: e.payload.argsDigest,
    outcome: e.payload.outcome,
    service: e.payload.service,
    surface: e.payload.surface ?? null,
    actor: e.actor?.subject ?? null,
    actorKey: e.payload.actorKey ?? null,
    actorKind: e.actor?.kind ?? null,
  });
}
