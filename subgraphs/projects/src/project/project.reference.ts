import type { ReferenceResolvers } from '@keelson/kit';
import { projectsLoaders, type ProjectsContext } from '../context';

/** Entity references other subgraphs resolve through this one, batched per request. */
export const projectsReferenceResolvers: ReferenceResolvers = {
  Project: {
    __resolveReference: (ref: { id: string }, ctx: ProjectsContext) => projectsLoaders(ctx).project.load(ref.id),
  },
  WorkspaceLease: {
    __resolveReference: (ref: { id: string }, ctx: ProjectsContext) => projectsLoaders(ctx).lease.load(ref.id),
  },
} as ReferenceResolvers;
