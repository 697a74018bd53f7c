import type { SwarmRecord } from '@keelson/swarms';
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
    // The stored view is the GraphQL agent but for its lease (only the id is public) and its usage.
    agentViews: r.agents.map(({ worktree, usage: _usage, ...view }): SwarmAgent => ({ ...view, worktreeId: worktree?.leaseId ?? null })),
  });
}
