import { byId, IDEMPOTENCY_KEY, whole } from '@keelson/platform';
import { RequiresScope, SteerResult, steerResult } from '@keelson/kit';
import type { MessageView, SwarmRecord } from '@keelson/swarms';
import { resolveSwarmLimits, type EvidenceItem, type ParsedStartSwarmInput } from '@keelson/schema';
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import { swarmsLoaders, type SwarmsContext } from '../context';
import { HarnessSession, Op, Project, WorkspaceLease } from '../federation/stubs.type';
import { toSwarm } from './swarm.map';
import { StartSwarmInput } from './swarm.input';
import {
  Swarm,
  SwarmAgent,
  SwarmChannel,
  SwarmConnection,
  SwarmEvidence,
  SwarmLimits,
  SwarmMessage,
  SwarmMessageConnection,
  SwarmStatusEnum,
  SwarmThread,
} from './swarm.type';

const record = async (ctx: SwarmsContext, swarm: Swarm): Promise<SwarmRecord> => (await swarmsLoaders(ctx).swarm.load(swarm.id))!;
const message = (m: MessageView): SwarmMessage => Object.assign(new SwarmMessage(), m);

@Resolver(() => Swarm)
export class SwarmResolver {
  @RequiresScope('read')
  @Query(() => Swarm, { nullable: true })
  async swarm(@Ctx() ctx: SwarmsContext, @Arg('id', () => ID) id: string): Promise<Swarm | null> {
    const r = await swarmsLoaders(ctx).swarm.load(id);
    return r ? toSwarm(r) : null;
  }

  @RequiresScope('read')
  @Query(() => SwarmConnection, { description: 'Swarms, newest first; filter by status.' })
  async swarms(
    @Ctx() ctx: SwarmsContext,
    @Arg('status', () => SwarmStatusEnum, { nullable: true }) status?: string | null,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<SwarmConnection> {
    const page = await ctx.services.swarms.list({ status, first, after });
    const rows = page.rows.slice(0, page.first);
    const edges = rows.map((r) => ({ cursor: String(r.seq), node: toSwarm(r) }));
    return { edges, pageInfo: { hasNextPage: page.rows.length > page.first, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @RequiresScope('operate')
  @Mutation(() => Swarm, { description: 'Starts a swarm and returns it at once (RUNNING, its op already registered). SERVICE_UNAVAILABLE, creating nothing, when there is no bus.' })
  async startSwarm(
    @Ctx() ctx: SwarmsContext,
    @Arg('input', () => StartSwarmInput) input: StartSwarmInput,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<Swarm> {
    const raw = JSON.parse(JSON.stringify(input)) as unknown;
    const call = { caller: ctx.caller, mutation: 'startSwarm', key: idempotencyKey, input: raw };
    const swarmById = byId(async (id) => {
      const [record] = await ctx.services.swarms.byIds([id]);
      return record ? toSwarm(record) : null;
    });
    return ctx.services.idempotency.run(call, swarmById, async () => toSwarm(await ctx.services.swarms.start(raw)));
  }

  @RequiresScope('operate')
  @Mutation(() => SwarmMessage, { description: 'The operator speaking in the swarm, top-level or in a thread; it routes like any human post.' })
  async postToSwarm(
    @Ctx() ctx: SwarmsContext,
    @Arg('id', () => ID) id: string,
    @Arg('body') body: string,
    @Arg('threadRootId', () => ID, { nullable: true }) threadRootId?: string | null,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<SwarmMessage> {
    const call = { caller: ctx.caller, mutation: 'postToSwarm', key: idempotencyKey, input: { id, body, threadRootId: threadRootId ?? null } };
    return ctx.services.idempotency.run(call, whole((json) => message(json as MessageView)), async () => message(await ctx.services.swarms.post(id, body, threadRootId)));
  }

  @RequiresScope('operate')
  @Mutation(() => SteerResult, { description: 'A steering note, posted as the operator (it wakes the lead) and recorded as the op\'s OP_STEERED frame; not accepted once the swarm has ended.' })
  async steerSwarm(
    @Ctx() ctx: SwarmsContext,
    @Arg('id', () => ID) id: string,
    @Arg('note') note: string,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<SteerResult> {
    const call = { caller: ctx.caller, mutation: 'steerSwarm', key: idempotencyKey, input: { id, note } };
    const answer = await ctx.services.idempotency.run(call, whole<{ accepted: boolean; reason: string | null }>(), () => ctx.services.swarms.steer(id, note));
    return steerResult(answer.accepted ? 'ACCEPTED' : 'REJECTED', answer.reason);
  }

  @RequiresScope('operate')
  @Mutation(() => Swarm, { description: 'Stops a running swarm (STOPPED with the reason; the op CANCELLED; every token revoked). The same as cancelOp on its op.' })
  async stopSwarm(@Ctx() ctx: SwarmsContext, @Arg('id', () => ID) id: string, @Arg('reason', () => String, { nullable: true }) reason?: string | null): Promise<Swarm> {
    return toSwarm(await ctx.services.swarms.stop(id, reason));
  }

  @FieldResolver(() => Op, { description: 'The durable op the swarm is (opFrames, cancelOp and steerOp work on it).' })
  op(@Root() swarm: Swarm): Op {
    return Object.assign(new Op(), { id: swarm.opId });
  }

  @FieldResolver(() => Project, { nullable: true })
  project(@Root() swarm: Swarm): Project | null {
    return swarm.projectId ? Object.assign(new Project(), { id: swarm.projectId }) : null;
  }

  @FieldResolver(() => SwarmChannel, { description: 'Its ClickClack channel (webUrl opens ClickClack\'s own UI).' })
  channel(@Root() swarm: Swarm): SwarmChannel {
    return Object.assign(new SwarmChannel(), { workspaceId: swarm.workspaceId ?? '', channelId: swarm.channelId ?? '', name: swarm.channelName ?? `swarm-${swarm.id.slice(0, 8)}`, webUrl: swarm.webUrl });
  }

  @FieldResolver(() => [SwarmAgent])
  agents(@Root() swarm: Swarm): SwarmAgent[] {
    return swarm.agentViews.map((a) => Object.assign(new SwarmAgent(), a));
  }

  @FieldResolver(() => SwarmLimits)
  limits(@Root() swarm: Swarm): SwarmLimits {
    return Object.assign(new SwarmLimits(), resolveSwarmLimits(swarm.input as ParsedStartSwarmInput));
  }

  @FieldResolver(() => [SwarmEvidence], { description: 'The evidence supplied with the task, verbatim.' })
  evidence(@Root() swarm: Swarm): SwarmEvidence[] {
    return ((swarm.input as { evidence?: EvidenceItem[] }).evidence ?? []).map((e) =>
      Object.assign(new SwarmEvidence(), { title: e.title, sourceUrl: e.sourceUrl ?? null, chars: e.body.length, body: e.body }),
    );
  }

  @FieldResolver(() => String, { nullable: true, description: 'The swarm\'s workflow in the Temporal Web UI.' })
  temporalUiUrl(@Root() swarm: Swarm, @Ctx() ctx: SwarmsContext): string | null {
    return ctx.services.swarms.temporalUiUrl(swarm.temporalWorkflowId);
  }

  @FieldResolver(() => SwarmMessageConnection, { description: 'Top-level messages of the channel, oldest first, read from the bus on request (the cursor is the channel sequence).' })
  async messages(
    @Root() swarm: Swarm,
    @Ctx() ctx: SwarmsContext,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<SwarmMessageConnection> {
    const page = await ctx.services.swarms.messages(await record(ctx, swarm), { first, after });
    const edges = page.rows.map((m) => ({ cursor: String(m.seq ?? ''), node: message(m) }));
    return { edges, pageInfo: { hasNextPage: page.hasNext, endCursor: edges.at(-1)?.cursor ?? null } };
  }

  @FieldResolver(() => SwarmThread, { description: 'One thread (any of its messages\' ids): the root and its replies, read from the bus on request.' })
  async thread(@Root() swarm: Swarm, @Ctx() ctx: SwarmsContext, @Arg('rootId', () => ID) rootId: string): Promise<SwarmThread> {
    const t = await ctx.services.swarms.thread(await record(ctx, swarm), rootId);
    return Object.assign(new SwarmThread(), { root: message(t.root), replies: t.replies.map(message) });
  }
}

@Resolver(() => SwarmAgent)
export class SwarmAgentResolver {
  @FieldResolver(() => HarnessSession, { nullable: true, description: 'A harness session; null: swarm agents resume provider sessions (see sessionId).' })
  session(): HarnessSession | null {
    return null;
  }

  @FieldResolver(() => WorkspaceLease, { nullable: true, description: 'A writer\'s worktree lease (write mode).' })
  worktree(@Root() agent: SwarmAgent): WorkspaceLease | null {
    return agent.worktreeId ? Object.assign(new WorkspaceLease(), { id: agent.worktreeId }) : null;
  }
}
