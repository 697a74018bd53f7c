import { Authenticated, parseInput, RequiresScope } from '@keelson/kit';
import { actorOf, scopeSchema, isUuid, MeshError } from '@keelson/schema';
import { Arg, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import { z } from 'zod';
import type { IdentityContext } from '../context';
import { Viewer } from '../viewer/viewer.type';
import { ApiToken, CreatedApiToken } from './apiToken.type';

const createInput = z.strictObject({
  name: z.string().trim().min(1, 'must not be empty').max(100, 'at most 100 characters'),
  scopes: z.array(scopeSchema).min(1, 'grant at least one scope'),
  expiresInDays: z.number().int().min(1, 'at least 1').max(3650, 'at most 3650 (ten years)').optional(),
});

@Resolver()
export class ApiTokenResolver {
  @Query(() => Viewer, { description: 'The caller of this request.' })
  @Authenticated()
  viewer(@Ctx() ctx: IdentityContext): Viewer {
    const { caller } = ctx;
    return { subject: caller.subject, kind: caller.kind, scopes: caller.scopes, tokenId: caller.tokenId ?? null };
  }

  @Query(() => [ApiToken], { description: 'Every API token, newest first (revoked ones included).' })
  @RequiresScope('admin')
  apiTokens(@Ctx() ctx: IdentityContext): Promise<ApiToken[]> {
    return ctx.tokens.list();
  }

  @Mutation(() => CreatedApiToken, { description: 'Make an API token; its secret is in the answer only. BAD_USER_INPUT for an empty name, no or unknown scopes, or an expiry outside 1–3650 days.' })
  @RequiresScope('admin')
  async createApiToken(
    @Ctx() ctx: IdentityContext,
    @Arg('name', () => String) name: string,
    @Arg('scopes', () => [String]) scopes: string[],
    @Arg('expiresInDays', () => Int, { nullable: true }) expiresInDays?: number | null,
  ): Promise<CreatedApiToken> {
    const input = parseInput(createInput, { name, scopes, ...(expiresInDays != null ? { expiresInDays } : {}) });
    const { token, record } = await ctx.tokens.create(input, actorOf(ctx.caller));
    return { token, apiToken: record };
  }

  @Mutation(() => ApiToken, { description: "Revoke a token: refused at once, and its open WebSockets are closed (4401) within seconds. NOT_FOUND for an unknown id." })
  @RequiresScope('admin')
  revokeApiToken(@Ctx() ctx: IdentityContext, @Arg('id', () => ID) id: string): Promise<ApiToken> {
    if (!isUuid(id)) throw new MeshError('BAD_USER_INPUT', `id: expected an API token id (a UUID), got "${id.slice(0, 80)}"`);
    return ctx.tokens.revoke(id, actorOf(ctx.caller));
  }
}
