import { parseInput, RequiresScope } from '@keelson/kit';
import { Arg, Ctx, FieldResolver, ID, Query, Resolver, Root } from 'type-graphql';
import { ribsLoaders, type RibsContext } from '../context';
import { ribIdSchema } from '../inputs';
import { ribEntity, toAgent, toCommand, toSurface, toToolInfo, toView } from './rib.mapping';
import { AgentSummary, CommandDescriptor, Rib, RibAuthStatus, RibManifest, RibSurface, RibView, ToolInfo } from './rib.type';

@Resolver(() => Rib)
export class RibResolver {
  @RequiresScope('read')
  @Query(() => RibManifest, { description: 'The active ribs (views and surfaces re-validated now, auth probed) and the cross-rib grants in force.' })
  ribManifest(@Ctx() ctx: RibsContext): RibManifest {
    const { host } = ctx.services;
    return Object.assign(new RibManifest(), { ribIds: [...host.ribIds], crossRibGrants: host.grants.crossRib() });
  }

  @RequiresScope('read')
  @Query(() => Rib, { nullable: true, description: 'One rib by id: active, or installed and filtered out (registered false); null when not installed.' })
  rib(@Ctx() ctx: RibsContext, @Arg('id', () => ID) id: string): Rib | null {
    return ribEntity(ctx.services.host, parseInput(ribIdSchema, id, 'id'));
  }

  @FieldResolver(() => [RibView], { description: 'Re-read and re-validated per request: a malformed or out-of-namespace view is dropped (and warned), never served.' })
  async views(@Root() rib: Rib, @Ctx() ctx: RibsContext): Promise<RibView[]> {
    return ((await ribsLoaders(ctx).summary.load(rib.id))?.views ?? []).map(toView);
  }

  @FieldResolver(() => [RibSurface], { description: 'Re-validated per request like views (a duplicate surface id is dropped); runtime regions included.' })
  async surfaces(@Root() rib: Rib, @Ctx() ctx: RibsContext): Promise<RibSurface[]> {
    return ((await ribsLoaders(ctx).summary.load(rib.id))?.surfaces ?? []).map((s) => toSurface(rib.id, s));
  }

  @FieldResolver(() => RibAuthStatus, { nullable: true, description: 'The credential probe, run now; null when the rib declares none.' })
  async auth(@Root() rib: Rib, @Ctx() ctx: RibsContext): Promise<RibAuthStatus | null> {
    const auth = (await ribsLoaders(ctx).summary.load(rib.id))?.auth;
    return auth ? Object.assign(new RibAuthStatus(), { authenticated: auth.authenticated, statusMessage: auth.statusMessage ?? null }) : null;
  }

  @FieldResolver(() => [ToolInfo], { description: 'The tools this rib owns in the shared registry.' })
  async tools(@Root() rib: Rib, @Ctx() ctx: RibsContext): Promise<ToolInfo[]> {
    return ((await ribsLoaders(ctx).summary.load(rib.id))?.tools ?? []).map(toToolInfo);
  }

  @FieldResolver(() => [AgentSummary], { description: 'The named chat agents this rib offers.' })
  async agents(@Root() rib: Rib, @Ctx() ctx: RibsContext): Promise<AgentSummary[]> {
    return rib.registered ? (await ribsLoaders(ctx).agents.load(rib.id)).map(toAgent) : [];
  }

  @FieldResolver(() => [CommandDescriptor], { description: 'The slash commands this rib adds to the chat composer.' })
  async commands(@Root() rib: Rib, @Ctx() ctx: RibsContext): Promise<CommandDescriptor[]> {
    return rib.registered ? (await ribsLoaders(ctx).commands.load(rib.id)).map(toCommand) : [];
  }
}

@Resolver(() => RibManifest)
export class RibManifestResolver {
  @FieldResolver(() => [Rib], { description: 'Active ribs, in activation order.' })
  ribs(@Root() manifest: RibManifest, @Ctx() ctx: RibsContext): Rib[] {
    return manifest.ribIds.map((id) => ribEntity(ctx.services.host, id)).filter((r): r is Rib => r !== null);
  }
}
