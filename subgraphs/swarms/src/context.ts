import { byKeys, type SubgraphContext } from '@keelson/kit';
import type { SwarmRecord, SwarmsServices } from '@keelson/swarms';

export interface SwarmsContext extends SubgraphContext {
  services: SwarmsServices;
}

/** The per-request loaders of this subgraph; field and reference resolvers go through them. */
export function swarmsLoaders(ctx: SwarmsContext) {
  return ctx.loaders.setOf(makeSwarmsLoaders, ctx);
}

function makeSwarmsLoaders(ctx: SwarmsContext) {
  const { loaders, services } = ctx;
  return {
    swarm: loaders.get<string, SwarmRecord | null>('swarm', async (ids) => byKeys(ids, await services.swarms.byIds(ids), (s) => s.id)),
  };
}
