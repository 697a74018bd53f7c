import type { ApprovalRecord } from '@keelson/operator';
import { approvalKinds, type ApprovalDecision, type ApprovalKind, type EventEnvelope, type ApprovalEventPayload } from '@keelson/schema';
import { GraphQLJSON } from 'graphql-scalars';
import { Directive, Field, ID, ObjectType, registerEnumType } from 'type-graphql';
import { PageInfo } from '@keelson/kit';
import { ApprovalDecisionEnum } from '../session/session.resolver';

export const ApprovalKindEnum = Object.fromEntries(approvalKinds.map((k) => [k, k])) as { [K in ApprovalKind]: K };
registerEnumType(ApprovalKindEnum, {
  name: 'ApprovalKind',
  description: 'Where a gate comes from: a run\'s approval node, a policy ask, a harness CLI\'s tool permission, a swarm gate.',
});

@ObjectType({ description: 'One gate waiting for (or answered by) an operator: every kind in one inbox.' })
@Directive('@key(fields: "id")')
export class Approval {
  @Field(() => ID)
  id!: string;

  @Field(() => ApprovalKindEnum)
  kind!: ApprovalKind;

  @Field({ description: '`OPEN`, `ANSWERED`, `EXPIRED` (its asker stopped waiting) or `CANCELLED` (its work ended first).' })
  status!: string;

  @Field({ description: 'What is asked, as its gate words it (a run gate\'s prompt, the policy and tool of an ask, the tool a CLI wants).' })
  question!: string;

  @Field(() => GraphQLJSON, { nullable: true, description: 'Small facts of the gate: run, node and pause ids; a request id, tool and input.' })
  detail!: unknown;

  @Field(() => Date)
  openedAt!: Date;

  @Field(() => Date, { nullable: true })
  answeredAt!: Date | null;

  @Field(() => String, { nullable: true, description: 'Who answered (the caller\'s subject), whichever door they used.' })
  answeredBy!: string | null;

  @Field(() => String, { nullable: true, description: 'The answer as its gate recorded it (a run gate\'s text, APPROVE or DENY for a tool).' })
  answer!: string | null;

  @Field(() => ApprovalDecisionEnum, { nullable: true })
  decision!: ApprovalDecision | null;

  @Field(() => Date, { nullable: true, description: 'When it stopped being open (answered, expired or cancelled).' })
  closedAt!: Date | null;

  @Field(() => String, { nullable: true, description: 'Why it closed unanswered.' })
  closeReason!: string | null;

  runId!: string | null;
  sessionId!: string | null;
  swarmId!: string | null;
  projectId!: string | null;
  seq!: number;
}

export function toApproval(r: ApprovalRecord): Approval {
  return Object.assign(new Approval(), {
    id: r.id,
    kind: r.kind,
    status: r.status,
    question: r.question,
    detail: r.detail,
    openedAt: r.openedAt,
    answeredAt: r.answeredAt,
    answeredBy: r.answeredBy,
    answer: r.answer,
    decision: r.decision,
    closedAt: r.closedAt,
    closeReason: r.closeReason,
    runId: r.runId,
    sessionId: r.sessionId,
    swarmId: r.swarmId,
    projectId: r.projectId,
    seq: r.seq,
  });
}

@ObjectType()
export class ApprovalEdge {
  @Field()
  cursor!: string;

  @Field(() => Approval)
  node!: Approval;
}

@ObjectType({ description: 'A page of the inbox, oldest first (the order the gates were opened).' })
export class ApprovalConnection {
  @Field(() => [ApprovalEdge])
  edges!: ApprovalEdge[];

  @Field(() => PageInfo)
  pageInfo!: PageInfo;
}

@ObjectType({ description: 'An approval opened, answered, expired or cancelled; ids only, the approval read when delivered.' })
export class ApprovalEvent {
  @Field({ description: 'Opaque; pass as `after` to resume right after this event.' })
  cursor!: string;

  @Field({ description: '`APPROVAL_OPENED`, `APPROVAL_ANSWERED`, `APPROVAL_EXPIRED` or `APPROVAL_CANCELLED`.' })
  type!: string;

  @Field(() => Date)
  at!: Date;

  @Field(() => ID)
  approvalId!: string;

  @Field(() => ApprovalKindEnum)
  kind!: ApprovalKind;

  @Field({ description: 'The status this transition left it in.' })
  status!: string;

  @Field(() => String, { nullable: true, description: 'Who caused it (the answerer\'s subject); null for the mesh\'s own transitions.' })
  actor!: string | null;
}

export function toApprovalEvent(e: EventEnvelope<ApprovalEventPayload>): ApprovalEvent {
  return Object.assign(new ApprovalEvent(), {
    cursor: e.cursor,
    type: e.type,
    at: e.at,
    approvalId: e.payload.approvalId,
    kind: e.payload.kind,
    status: e.payload.status,
    actor: e.actor?.subject ?? null,
  });
}
