import { isHarnessId } from '@keelson/harness';
import type { ReferenceResolvers } from '@keelson/kit';
import { toApproval } from './approval/approval.type';
import { sessionsLoaders, type SessionsContext } from './context';
import { harnessOf } from './harness/harness.resolver';
import { toSession } from './session/session.type';
import { toTask } from './task/task.type';

/** Entity references other subgraphs resolve through this one, batched per request. */
export const sessionsReferenceResolvers: ReferenceResolvers = {
  Harness: {
    __resolveReference: (ref: { id: string }) => (isHarnessId(ref.id) ? harnessOf(ref.id) : null),
  },
  HarnessSession: {
    __resolveReference: async (ref: { id: string }, ctx: SessionsContext) => {
      const view = await sessionsLoaders(ctx).session.load(ref.id);
      return view ? toSession(view) : null;
    },
  },
  Approval: {
    __resolveReference: async (ref: { id: string }, ctx: SessionsContext) => {
      const [row] = await ctx.services.approvals.reader.byIds([ref.id]);
      return row ? toApproval(row) : null;
    },
  },
  Task: {
    __resolveReference: async (ref: { id: string }, ctx: SessionsContext) => {
      const t = await sessionsLoaders(ctx).task.load(ref.id);
      return t ? toTask(t) : null;
    },
  },
} as ReferenceResolvers;
