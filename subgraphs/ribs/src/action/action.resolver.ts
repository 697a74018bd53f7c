import { JSONScalar, parseInput, RequiresScope } from '@keelson/kit';
import type { RibActionResult as HostActionResult } from '@keelson/ribs-contract';
import { Arg, Args, ArgsType, Ctx, Field, ID, Mutation, Resolver } from 'type-graphql';
import { z } from 'zod';
import type { RibsContext } from '../context';
import { agentSlugSchema, ribIdSchema } from '../inputs';
import { OpenChatSeed, RibActionResult } from './action.type';

const actionTypeSchema = z.string().min(1, 'is required').max(128, 'is at most 128 characters');

function toResult(result: HostActionResult): RibActionResult {
  if (!result.ok) return Object.assign(new RibActionResult(), { ok: false, data: null, effect: null, error: result.error });
  const data = result.data ?? null;
  const effect = data && typeof data === 'object' && !Array.isArray(data) && typeof (data as { effect?: unknown }).effect === 'string' ? (data as { effect: string }).effect : null;
  return Object.assign(new RibActionResult(), { ok: true, data, effect, error: null });
}

/**
 * The arguments of a board or canvas action (the same for both origins), declared in the order the
 * published SDL lists them.
 */
@ArgsType()
class ActionArgs {
  @Field(() => JSONScalar, { nullable: true })
  payload?: unknown;

  @Field(() => String)
  type!: string;

  @Field(() => ID)
  ribId!: string;
}

/** Dispatches an action to the rib with the origin the mutation stands for (board or canvas-html). */
async function dispatch(ctx: RibsContext, origin: 'ribAction' | 'canvasAction', args: ActionArgs): Promise<RibActionResult> {
  const id = parseInput(ribIdSchema, args.ribId, 'ribId');
  return toResult(await ctx.services.host[origin](id, parseInput(actionTypeSchema, args.type, 'type'), args.payload ?? undefined));
}

@Resolver()
export class ActionResolver {
  @RequiresScope('write')
  @Mutation(() => RibActionResult, {
    description: "Dispatch a board action to the rib's onAction with origin `board` (the trusted host UI).",
  })
  async ribAction(@Ctx() ctx: RibsContext, @Args(() => ActionArgs) args: ActionArgs): Promise<RibActionResult> {
    return dispatch(ctx, 'ribAction', args);
  }

  @RequiresScope('write')
  @Mutation(() => RibActionResult, {
    description:
      "Relay an action a sandboxed html canvas posted. The origin is stamped `canvas-html` by the server and cannot be claimed otherwise; the rib gates such verbs to a safe subset, and the reply may carry only open-canvas or open-chat.",
  })
  async canvasAction(@Ctx() ctx: RibsContext, @Args(() => ActionArgs) args: ActionArgs): Promise<RibActionResult> {
    return dispatch(ctx, 'canvasAction', args);
  }

  @RequiresScope('write')
  @Mutation(() => RibActionResult, { description: 'Send a persisted chat message to a rib that accepts ingest (the text is capped and validated).' })
  async ingest(
    @Ctx() ctx: RibsContext,
    @Arg('ribId', () => ID) ribId: string,
    @Arg('text', () => String) text: string,
    @Arg('sourceConversationId', () => ID, { nullable: true }) sourceConversationId?: string | null,
  ): Promise<RibActionResult> {
    const id = parseInput(ribIdSchema, ribId, 'ribId');
    return toResult(await ctx.services.host.ingest(id, { text, ...(sourceConversationId != null ? { sourceConversationId } : {}) }));
  }

  @RequiresScope('write')
  @Mutation(() => OpenChatSeed, { nullable: true, description: "Build one of a rib's named agents as a chat seed; null for an unknown slug." })
  async resolveAgent(@Ctx() ctx: RibsContext, @Arg('ribId', () => ID) ribId: string, @Arg('slug', () => String) slug: string): Promise<OpenChatSeed | null> {
    const seed = await ctx.services.host.resolveAgent(parseInput(ribIdSchema, ribId, 'ribId'), parseInput(agentSlugSchema, slug, 'slug'));
    if (!seed) return null;
    return Object.assign(new OpenChatSeed(), {
      systemPrompt: seed.systemPrompt,
      name: seed.name,
      openingPrompt: seed.openingPrompt ?? null,
      model: seed.model ?? null,
      providerId: seed.providerId ?? null,
    });
  }
}
