import { callerKey } from '@keelson/schema';
import { IDEMPOTENCY_KEY, whole } from '@keelson/platform';
import { parseInput, RequiresScope, SteerResult, steerResult } from '@keelson/kit';
import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import { z } from 'zod';
import type { SessionsContext } from '../context';
import { steerTextSchema, type SteerAnswer } from './steer.service';

const sessionIdArg = z.string().min(1).max(2048);

@Resolver()
export class SteerResolver {
  @RequiresScope('operate')
  @Mutation(() => SteerResult, {
    description:
      "Steers a session: into the live turn where the harness takes input mid-turn (capabilities.midTurnInput), otherwise QUEUED durably and run in order as the session's next turn; REJECTED with the reason when the queue is full or the harness cannot run a next turn.",
  })
  async steerSession(
    @Ctx() ctx: SessionsContext,
    @Arg('sessionId', () => ID) sessionId: string,
    @Arg('text', () => String) text: string,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey?: string | null,
  ): Promise<SteerResult> {
    const id = parseInput(sessionIdArg, sessionId, 'sessionId');
    const body = parseInput(steerTextSchema, text, 'text');
    const call = { caller: ctx.caller, mutation: 'steerSession', key: idempotencyKey, input: { sessionId: id, text: body } };
    const dedupe = idempotencyKey ? `${callerKey(ctx.caller)}\u0000${idempotencyKey}` : null;
    const answer = await ctx.services.idempotency.run<SteerAnswer>(call, whole(), () => ctx.services.steers.steer(id, body, dedupe));
    return steerResult(answer.status, answer.reason);
  }
}
