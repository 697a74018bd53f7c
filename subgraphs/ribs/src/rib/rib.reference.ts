import type { ReferenceResolvers } from '@keelson/kit';
import type { RibsContext } from '../context';
import { ribEntity } from './rib.mapping';

/** Other subgraphs reference ribs by id (`Run.rib`, `Op.rib`); no query is needed to resolve one. */
export const ribsReferenceResolvers: ReferenceResolvers = {
  Rib: {
    __resolveReference: (ref: { id: string }, ctx: RibsContext) => ribEntity(ctx.services.host, ref.id),
  },
} as ReferenceResolvers;
