import { RequiresScope } from '@keelson/kit';
import { Arg, Ctx, Mutation, Query, Resolver } from 'type-graphql';
import type { SwarmsContext } from '../context';
import { SwarmServer } from '../swarm/swarm.type';

const view = (v: object) => Object.assign(new SwarmServer(), v);

@Resolver(() => SwarmServer)
export class ServerResolver {
  @RequiresScope('read')
  @Query(() => SwarmServer, { description: 'The swarms\' bus: MANAGED, EXTERNAL or UNAVAILABLE (and why). Reading it never starts anything.' })
  async swarmServer(@Ctx() ctx: SwarmsContext): Promise<SwarmServer> {
    return view(await ctx.services.server.status());
  }

  @RequiresScope('admin')
  @Mutation(() => SwarmServer, { description: 'Starts (or adopts) the managed ClickClack. FORBIDDEN for a server the mesh was pointed at.' })
  async startSwarmServer(@Ctx() ctx: SwarmsContext): Promise<SwarmServer> {
    return view(await ctx.services.server.start());
  }

  @RequiresScope('admin')
  @Mutation(() => SwarmServer, { description: 'Stops the managed ClickClack (SIGINT, then SIGKILL). FORBIDDEN for a server the mesh was pointed at; CONFLICT while a swarm runs.' })
  async stopSwarmServer(@Ctx() ctx: SwarmsContext): Promise<SwarmServer> {
    return view(await ctx.services.server.stop());
  }

  @RequiresScope('admin')
  @Mutation(() => SwarmServer, { description: 'Stops the managed ClickClack, deletes its data directory and starts it fresh; needs confirm: true. FORBIDDEN for a server the mesh was pointed at.' })
  async resetSwarmServer(@Ctx() ctx: SwarmsContext, @Arg('confirm', () => Boolean) confirm: boolean): Promise<SwarmServer> {
    return view(await ctx.services.server.reset(confirm));
  }
}
