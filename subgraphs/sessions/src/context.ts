import { isUuid } from '@keelson/schema';
import type { EventLog, IdempotencyKeys } from '@keelson/platform';
import { byKeys, type SubgraphContext } from '@keelson/kit';
import type { CapabilityReport, HarnessApprovalRecord, HarnessControlPlane, HarnessPromptRecord, HarnessId, SessionView, TaskExecutorInfo, TaskRecord } from '@keelson/harness';
import type { ApprovalService } from './approval/approval.service';
import type { SteerService } from './steer/steer.service';
import type { TaskService } from './task/task.service';

export interface SessionsServices {
  plane: HarnessControlPlane;
  tasks: TaskService;
  /** steerSession (the sessionSteer workflow per session). */
  steers: SteerService;
  /** runTask's, startSession's and sendUserTurn's idempotency keys. */
  idempotency: IdempotencyKeys;
  /** The approval inbox (this subgraph serves the operator plane). */
  approvals: ApprovalService;
  events: EventLog;
}

export interface SessionsContext extends SubgraphContext {
  services: SessionsServices;
}

/** The per-request loaders of this subgraph; every field and reference resolver goes through them. */
export function sessionsLoaders(ctx: SessionsContext) {
  return ctx.loaders.setOf(makeSessionsLoaders, ctx);
}

function makeSessionsLoaders(ctx: SessionsContext) {
  const { loaders, services } = ctx;
  const { plane } = services;
  return {
    /** Sessions by id as given (canonical, alias or bare UUID), resolved once per request. */
    session: loaders.get<string, SessionView | null>('session', (ids) => Promise.all(ids.map((id) => plane.resolve(id).catch(() => null)))),
    report: loaders.get<HarnessId, CapabilityReport>('report', (ids) => Promise.all(ids.map((id) => plane.capabilities(id)))),
    executor: loaders.get<HarnessId, TaskExecutorInfo>('executor', (ids) => Promise.all(ids.map((id) => plane.taskExecutor(id)))),
    aliases: loaders.get<string, string[]>('aliases', async (ids) => {
      const map = await plane.store.aliasesOf(ids);
      return ids.map((id) => map.get(id) ?? []);
    }),
    task: loaders.get<string, TaskRecord | null>('task', async (ids) => byKeys(ids, await plane.store.tasksByIds(ids.filter(isUuid)), (t) => t.id)),
    approvals: loaders.get<string, HarnessApprovalRecord[]>('approvals', (ids) => Promise.all(ids.map((id) => plane.store.approvals(id, 'pending')))),
    prompts: loaders.get<string, HarnessPromptRecord[]>('prompts', (ids) => Promise.all(ids.map((id) => plane.store.prompts(id, 'pending')))),
  };
}

