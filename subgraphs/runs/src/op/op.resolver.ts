import { cursorSchema, isUuid, MeshError, streams, type EventEnvelope, type OpFramePayload } from '@keelson/schema';
import { parseInput, RequiresScope } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { pageArgsSchema, pageOf } from '@keelson/kit';
import { runsLoaders, runsPageKey, type RunsContext } from '../context';
import { Project } from '../federation/project.type';
import { Rib } from '../federation/rib.type';
import { OpType } from './op.type';
import type { Op } from '@keelson/runs';
import { OpFrame, OpFrameConnection, toOpFrame } from './opFrame.type';

@Resolver(() => OpType)
export class OpResolver {
  @RequiresScope('read')
  @Query(() => OpType, { nullable: true })
  op(@Ctx() ctx: RunsContext, @Arg('id', () => ID) id: string): Promise<Op | null> {
    return runsLoaders(ctx).op.load(id);
  }

  @RequiresScope('operate')
  @Mutation(() => OpType, { description: 'Cancels a running op: its implementation\'s signal aborts (CONFLICT once it finished otherwise).' })
  cancelOp(@Ctx() ctx: RunsContext, @Arg('id', () => ID) id: string): Promise<Op> {
    return ctx.services.ops.cancel(id);
  }

  @RequiresScope('operate')
  @Mutation(() => OpType, {
    description:
      'Steers a running steerable op, answered at once: the op is returned once the note is accepted (recorded as its next OP_STEERED frame, in order); CONFLICT with the reason once the op is finishing or finished, or when it has too many steers waiting or took its most. The same key is one steer however often it is sent.',
  })
  steerOp(
    @Ctx() ctx: RunsContext,
    @Arg('id', () => ID) id: string,
    @Arg('note') note: string,
    @Arg('key', () => String, { nullable: true, description: 'A caller key: a retry with the same key is the same steer (at most 128 characters).' }) key?: string | null,
  ): Promise<Op> {
    return ctx.services.ops.steer(id, note, key);
  }

  @FieldResolver(() => OpFrameConnection, { description: 'The op\'s frames, oldest first (the same cursors opFrames resumes from).' })
  async frames(
    @Root() op: Op,
    @Ctx() ctx: RunsContext,
    @Arg('first', () => Int, { nullable: true }) first?: number | null,
    @Arg('after', () => String, { nullable: true }) after?: string | null,
  ): Promise<OpFrameConnection> {
    const args = parseInput(pageArgsSchema, { first, after });
    const frames = await runsLoaders(ctx).opFrames.load(runsPageKey(op.id, args));
    return pageOf(frames.map(toOpFrame), args.first, (f) => f.cursor);
  }

  @FieldResolver(() => Rib, { nullable: true, description: 'The rib that registered the op.' })
  rib(@Root() op: Op): Rib | null {
    return op.ribId ? Object.assign(new Rib(), { id: op.ribId }) : null;
  }

  @FieldResolver(() => Project, { nullable: true })
  project(@Root() op: Op): Project | null {
    return op.projectId ? Object.assign(new Project(), { id: op.projectId }) : null;
  }

  @FieldResolver(() => String, { nullable: true, description: 'The op\'s page in the Temporal Web UI.' })
  temporalUiUrl(@Root() op: Op, @Ctx() ctx: RunsContext): string | null {
    return ctx.services.ops.temporalUiUrl(op.temporalWorkflowId);
  }
}

@Resolver(() => OpFrame)
export class OpFrameResolver {
  @RequiresScope('read')
  @Subscription(() => OpFrame, {
    description: 'One op\'s frames in order. Pass the last cursor you saw as `after` to resume with nothing missed.',
    subscribe: async ({ args, context }) => {
      const ctx = context as RunsContext;
      const after = parseInput(cursorSchema.nullish(), args.after, 'after');
      const opId = args.opId as string;
      if (!isUuid(opId) || !(await runsLoaders(ctx).op.load(opId))) throw new MeshError('NOT_FOUND', `op ${JSON.stringify(opId)} does not exist`);
      return ctx.services.events.tail(streams.ops, after, { key: opId });
    },
  })
  opFrames(
    @Root() frame: EventEnvelope<OpFramePayload>,
    @Arg('opId', () => ID) _opId: string,
    @Arg('after', () => String, { nullable: true }) _after?: string | null,
  ): OpFrame {
    return toOpFrame(frame);
  }

  @FieldResolver(() => OpType, { nullable: true, description: 'The op as it is now.' })
  op(@Root() frame: OpFrame, @Ctx() ctx: RunsContext): Promise<Op | null> {
    return runsLoaders(ctx).op.load(frame.opId);
  }
}
