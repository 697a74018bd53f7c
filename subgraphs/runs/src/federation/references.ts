import type { ReferenceResolvers } from '@keelson/kit';
import { toWorkflowDefinition } from '../catalog/workflowDefinition.type';
import { loadersOf, type RunsContext } from '../context';
import { Project } from './project.type';
import { Rib } from './rib.type';

/**
 * Entity references the gateway resolves through this subgraph. Project and Rib belong to other
 * subgraphs: runs needs only their id, so their references cost no query.
 */
export const referenceResolvers: ReferenceResolvers = {
  Run: {
    __resolveReference: (ref: { id: string }, ctx: RunsContext) => loadersOf(ctx).run.load(ref.id),
  },
  Op: {
    __resolveReference: (ref: { id: string }, ctx: RunsContext) => loadersOf(ctx).op.load(ref.id),
  },
  WorkflowDefinition: {
    __resolveReference: async (ref: { name: string }, ctx: RunsContext) => {
      const entry = (await loadersOf(ctx).catalog.load('')).entries.find((e) => e.name === ref.name);
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
