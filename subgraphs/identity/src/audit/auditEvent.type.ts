import { PageInfo } from '@keelson/kit';
import { Field, GraphQLISODateTime, ObjectType } from 'type-graphql';

@ObjectType({ description: 'One audit entry (seed 002): a mutation through the gateway or a rib tool call, as recorded when it ended.' })
export class AuditEvent {
  @Field({ description: 'Opaque; pass as `after` to continue right after this entry.' })
  cursor!: string;

  @Field(() => GraphQLISODateTime)
  at!: Date;

  @Field({ description: 'MUTATION | TOOL_CALL' })
  type!: string;

  @Field(() => String, { nullable: true, description: "The caller's subject (`token:<name>`, `device:<name>`, a JWT's sub, `service:<name>`); null for the mesh's own work." })
  actor!: string | null;

  @Field(() => String, { nullable: true, description: 'token | jwt | service' })
  actorKind!: string | null;

  @Field({ description: '`mutation <root fields>` or `tool <name>`.' })
  operation!: string;

  @Field({ description: 'SHA-256 (hex) of the canonical JSON of the arguments (the document and variables of a mutation, the input of a tool); never the arguments.' })
  argsSha256!: string;

  @Field({ description: '`ok`, the error code of a refused or failed mutation, or a tool run status (`tool-error`, `policy-denied`, …).' })
  outcome!: string;

  @Field(() => String, { nullable: true, description: "The client's operation name, or the tool's policy surface." })
  detail!: string | null;

  @Field({ description: 'The service that recorded it (gateway, ribs, worker).' })
  service!: string;
}

@ObjectType()
export class AuditEventEdge {
  @Field()
  cursor!: string;

  @Field(() => AuditEvent)
  node!: AuditEvent;
}

@ObjectType({ description: 'A page of the audit log, oldest first.' })
export class AuditEventConnection {
  @Field(() => [AuditEventEdge])
  edges!: AuditEventEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}
