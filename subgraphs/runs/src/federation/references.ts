import type { ReferenceResolvers } from '@keelson/kit';
import { toWorkflowDefinition } from '../catalog/workflowDefinition.type';
import { runsLoaders, type RunsContext } from '../context';
import { Project } from './project.type';
import { Rib } from './rib.type';

/**
 * Entity references the gateway resolves through this subgraph. Project and Rib belong to other
 * subgraphs: runs needs only their id, so their references cost no query.
 */
export const runsReferenceResolvers: ReferenceResolvers = {
  Run: {
    __resolveReference: (ref: { id: string }, ctx: RunsContext) => runsLoaders(ctx).run.load(ref.id),
  },
  Op: {
    __resolveReference: (ref: { id: string }, ctx: RunsContext) => runsLoaders(ctx).op.load(ref.id),
  },
  WorkflowDefinition: {
    __resolveReference: async (ref: { name: string }, ctx: RunsContext) => {
      const entry = (await runsLoaders(ctx).catalog.load('')).entries.find((e) => e.name === ref.name);
      return entry ? toWorkflowDefinition(entry) : null;
    },
  },
  Project: {
    __resolveReference: (ref: { id: string }) => Object.assign(new Project(), { id: ref.id }),
  },
  Rib: {
    __resolveReference: (ref: { id: string }) => Object.assign(new Rib(), { id: ref.id }),
  },
} as ReferenceResolvers;
