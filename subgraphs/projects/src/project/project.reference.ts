import type { ReferenceResolvers } from '@keelson/kit';
import { loadersOf, type ProjectsContext } from '../context';

/** Entity references other subgraphs resolve through this one, batched per request. */
export const referenceResolvers: ReferenceResolvers = {
  Project: {
    __resolveReference: (ref: { id: string }, ctx: ProjectsContext) => loadersOf(ctx).project.load(ref.id),
  },
  WorkspaceLease: {
    __resolveReference: (ref: { id: string }, ctx: ProjectsContext) => loadersOf(ctx).lease.load(ref.id),
  },
} as ReferenceResolvers;
