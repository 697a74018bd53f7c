import { randomUUID } from 'node:crypto';
import type { OpStore } from '@keelson/runs';
import { MeshError, resolveSwarmLimits, type ParsedStartSwarmInput } from '@keelson/schema';
import { kickoffText } from '../engine/prompt';
import type { SwarmPlan, SwarmsExecutor } from '../executor';
import type { SwarmStore } from '../store/swarmStore';

export interface LaunchSwarmDeps {
  ops: OpStore;
  swarms: SwarmStore;
  executor: SwarmsExecutor;
  /** Heartbeat timeout of the swarm's tail and turn activities. */
  heartbeatTimeoutMs: number;
}

export interface LaunchSwarmArgs {
  input: ParsedStartSwarmInput;
  bus: { mode: 'MANAGED' | 'EXTERNAL'; url: string };
  /** The resolved project (its root is where READ work tools look). */
  project?: { id: string; name: string; rootPath: string } | null;
  /** Tests: continue as new past this many history events. */
  continueAsNewAfterEvents?: number;
}

/** What a launch registered. */
export interface LaunchedSwarm {
  swarmId: string;
  opId: string;
  workflowId: string;
  /** The executor's id of the workflow's first execution (a continue-as-new starts another). */
  firstRunId: string;
}

const LEAD_ROLE = 'the lead: plans the work, routes it to the agents, and reports the conclusion';

function planOf(ids: { swarmId: string; opId: string }, args: LaunchSwarmArgs, heartbeatTimeoutMs: number): SwarmPlan {
  const { input } = args;
  return {
    ...ids,
    limits: resolveSwarmLimits(input),
    leadRole: LEAD_ROLE,
    agents: (input.agents ?? []).map((a) => ({ name: a.name, role: a.role })),
    writeMode: input.writeMode ?? false,
    workTools: input.workTools === 'READ' || (input.writeMode ?? false),
    ...(args.project ? { projectId: args.project.id, projectRoot: args.project.rootPath } : {}),
    ...(input.provider ? { provider: input.provider } : {}),
    ...(input.model ? { model: input.model } : {}),
    ...(input.workerModel ? { workerModel: input.workerModel } : {}),
    kickoff: kickoffText(input.task, input.evidence),
    heartbeatTimeoutMs,
    ...(args.continueAsNewAfterEvents !== undefined ? { continueAsNewAfterEvents: args.continueAsNewAfterEvents } : {}),
  };
}

/**
 * Registers a swarm as one durable op and starts its workflow, so its op id exists at once: the swarm
 * id, the op row (`kind: swarm`, steerable, naming the workflow), the swarm row (the input, evidence
 * verbatim), then the executor's `swarm-<id>`. A start that never reaches the executor leaves both rows
 * failed, and is SERVICE_UNAVAILABLE.
 */
export async function launchSwarm(deps: LaunchSwarmDeps, args: LaunchSwarmArgs): Promise<LaunchedSwarm> {
  const { input } = args;
  const swarmId = randomUUID();
  const opId = randomUUID();
  const workflowId = deps.executor.swarmWorkflowId(swarmId);
  const title = `swarm: ${input.task.trim().split('\n')[0]!.slice(0, 120)}`;
  const plan = planOf({ swarmId, opId }, args, deps.heartbeatTimeoutMs);
  const projectId = args.project?.id ?? null;
  await deps.ops.createOp({ id: opId, kind: 'swarm', title, input: { swarmId }, ribId: 'swarm', projectId, steerable: true, temporalWorkflowId: workflowId });
  await deps.swarms.create({ id: swarmId, opId, task: input.task, input: { ...input, limits: plan.limits }, projectId, busMode: args.bus.mode, busUrl: args.bus.url, temporalWorkflowId: workflowId });
  const started = await deps.executor.startSwarm({ workflowId, title, task: input.task, project: args.project?.name ?? null, plan });
  if (!started.ok) {
    await deps.ops.failToStart(opId, started.message);
    await deps.swarms.failToStart(swarmId, started.message);
    throw new MeshError('SERVICE_UNAVAILABLE', `swarm ${swarmId} could not start: ${started.message}`);
  }
  return { swarmId, opId, workflowId, firstRunId: started.executionId };
}
