import type { ReferenceResolvers } from '@keelson/kit';
import { swarmsLoaders, type SwarmsContext } from '../context';
import { toSwarm } from '../swarm/swarm.map';

/** Entity references the gateway resolves through this subgraph. */
export const swarmsReferenceResolvers: ReferenceResolvers = {
  Swarm: {
    __resolveReference: async (ref: { id: string }, ctx: SwarmsContext) => {
      const r = await swarmsLoaders(ctx).swarm.load(ref.id);
      return r ? toSwarm(r) : null;
    },
  },
} as ReferenceResolvers;
