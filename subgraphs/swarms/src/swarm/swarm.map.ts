import type { SwarmRecord } from '@keelson/rib-swarm';
import { Swarm, type SwarmAgent } from './swarm.type';

/** The GraphQL object of a swarm record. */
export function toSwarm(r: SwarmRecord): Swarm {
  return Object.assign(new Swarm(), {
    id: r.id,
    task: r.task,
    status: r.status,
    turnsUsed: r.turnsUsed,
    conclusion: r.conclusion,
    error: r.error,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    temporalWorkflowId: r.temporalWorkflowId,
    opId: r.opId,
    projectId: r.projectId,
    input: r.input,
    workspaceId: r.workspaceId,
    channelId: r.channelId,
    channelName: r.channelName,
    webUrl: r.webUrl,
    agentViews: r.agents.map(
      (a): SwarmAgent => ({
        id: a.id,
        handle: a.handle,
        displayName: a.displayName,
        role: a.role,
        lead: a.lead,
        writer: a.writer,
        status: a.status,
        finished: a.finished,
        turns: a.turns,
        inboxDepth: a.inboxDepth,
        sessionId: a.sessionId,
        model: a.model,
        botUserId: a.botUserId,
        worktreeId: a.worktree?.leaseId ?? null,
      }),
    ),
  });
}
