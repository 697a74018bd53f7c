import { parseInput, RequiresScope } from '@keelson/kit';
import { approvalKinds, approvalStatuses, cursorSchema, streams, type ApprovalDecision, type ApprovalEventPayload, type ApprovalKind, type EventEnvelope } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { z } from 'zod';
import { sessionsLoaders, type SessionsContext } from '../context';
import { Project, Run, Swarm } from '../federation/stubs.type';
import { toSession } from '../session/session.type';
import { HarnessSession } from '../session/session.type';
import { ApprovalDecisionEnum } from '../session/session.resolver';
import { Approval, ApprovalConnection, ApprovalEvent, ApprovalKindEnum, toApproval, toApprovalEvent } from './approval.type';

const listSchema = z.object({
  status: z.enum(approvalStatuses, { error: `expected one of ${approvalStatuses.join(', ')}` }).nullish(),
  kind: z.enum(approvalKinds).nullish(),
  first: z.number().int().min(0, 'must be at least 0').max(500, 'must be at most 500').nullish().transform((v) => v ?? 50),
  after: cursorSchema.nullish().transform((v) => (v == null ? null : Number(v))),
});

const answerSchema = z.object({
  id: z.string().min(1, 'must not be empty').max(64),
  text: z.string().nullish(),
});

@Resolver(() => Approval)
export class ApprovalResolver {
  @RequiresScope('read')
  @Query(() => ApprovalConnection, {
    description: 'The approval inbox: every gate of every kind (run gates, policy asks, harness tool permissions, swarm gates), oldest first; filter by status (OPEN, ANSWERED, EXPIRED, CANCELLED) and kind.',
  })
  async approvals(
    @Ctx() ctx: SessionsContext,
    @Arg('status', () => String, { nullable: true }) status?: string | null,
    @Arg('kind', () => ApprovalKindEnum, { nullable: true }) kind?: ApprovalKind | null,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<ApprovalConnection> {
    const a = parseInput(listSchema, { status, kind, first, after }, 'args');
    const rows = await ctx.services.approvals.reader.page({ status: a.status ?? null, kind: a.kind ?? null }, a.after, a.first + 1);
    const page = rows.slice(0, a.first).map(toApproval);
    const edges = page.map((node) => ({ cursor: String(node.seq), node }));
    return { edges, pageInfo: { hasNextPage: rows.length > a.first, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @RequiresScope('operate')
  @Mutation(() => Approval, {
    description:
      'Answers any approval — one door for every gate. Run gates and policy asks: APPROVE answers `approve`, DENY answers `text` (default `denied`) as feedback. Harness tools: as resolveApproval. An approval that is no longer open (answered, expired, cancelled) is CONFLICT naming why; the answerer is the caller.',
  })
  async answerApproval(
    @Ctx() ctx: SessionsContext,
    @Arg('id', () => ID) id: string,
    @Arg('decision', () => ApprovalDecisionEnum) decision: ApprovalDecision,
    @Arg('text', () => String, { nullable: true }) text?: string | null,
  ): Promise<Approval> {
    const a = parseInput(answerSchema, { id, text }, 'args');
    return toApproval(await ctx.services.approvals.answer(a.id, decision, a.text ?? null));
  }

  @RequiresScope('read')
  @Subscription(() => ApprovalEvent, {
    description: 'Approvals opened, answered, expired and cancelled, in commit order: replays what followed `after`, then follows live — nothing missed, nothing twice.',
    subscribe: ({ args, context }) => {
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      return (context as SessionsContext).services.events.tail(streams.approvals, after);
    },
  })
  approvalEvents(@Root() event: EventEnvelope<ApprovalEventPayload>, @Arg('after', () => String, { nullable: true }) _after?: string | null): ApprovalEvent {
    return toApprovalEvent(event);
  }

  @FieldResolver(() => Run, { nullable: true, description: 'The run whose gate this is (for a policy ask, its policy-approval run).' })
  run(@Root() a: Approval): Run | null {
    return a.runId ? Object.assign(new Run(), { id: a.runId }) : null;
  }

  @FieldResolver(() => HarnessSession, { nullable: true, description: 'The session whose CLI asked (harness tools).' })
  async session(@Root() a: Approval, @Ctx() ctx: SessionsContext): Promise<HarnessSession | null> {
    if (!a.sessionId) return null;
    const view = await sessionsLoaders(ctx).session.load(a.sessionId);
    return view ? toSession(view) : null;
  }

  @FieldResolver(() => Swarm, { nullable: true })
  swarm(@Root() a: Approval): Swarm | null {
    return a.swarmId ? Object.assign(new Swarm(), { id: a.swarmId }) : null;
  }

  @FieldResolver(() => Project, { nullable: true })
  project(@Root() a: Approval): Project | null {
    return a.projectId ? Object.assign(new Project(), { id: a.projectId }) : null;
  }
}

@Resolver(() => ApprovalEvent)
export class ApprovalEventResolver {
  @FieldResolver(() => Approval, { description: 'The approval as it is now.' })
  async approval(@Root() e: ApprovalEvent, @Ctx() ctx: SessionsContext): Promise<Approval> {
    return toApproval(await ctx.services.approvals.require(e.approvalId));
  }
}
