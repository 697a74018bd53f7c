import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { kickoffText, type SwarmStore } from '@keelson/rib-swarm';
import { MeshError, resolveSwarmLimits, workflowKinds, workflowTypes, type ParsedStartSwarmInput } from '@keelson/schema';
import { keelsonSearchAttributes } from './searchAttributeKeys';
import type { OpStore } from '@keelson/runs';
import type { swarm, SwarmWorkflowInput } from './workflows';

/** `swarm-<swarm id>`: the swarm's one workflow, findable by id in the Temporal UI. */
export function swarmWorkflowId(swarmId: string): string {
  return `swarm-${swarmId}`;
}

export interface LaunchSwarmDeps {
  ops: OpStore;
  swarms: SwarmStore;
  temporal: Client;
  taskQueue: string;
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
  /** The run id of the workflow's first execution (a continue-as-new starts another). */
  firstRunId: string;
}

/**
 * Registers a swarm as one durable op and starts its workflow, so its op id exists at once: the op
 * row (`kind: swarm`, steerable, naming the workflow), the swarm row (the input, evidence verbatim),
 * then `swarm-<id>` with `KeelsonKind=swarm`, `KeelsonRib=swarm`, `KeelsonProject`. A start that never
 * reaches Temporal leaves both rows failed, and is SERVICE_UNAVAILABLE.
 */
export async function launchSwarm(deps: LaunchSwarmDeps, args: LaunchSwarmArgs): Promise<LaunchedSwarm> {
  const { input } = args;
  const swarmId = randomUUID();
  const opId = randomUUID();
  const workflowId = swarmWorkflowId(swarmId);
  const firstLine = input.task.trim().split('\n')[0]!.slice(0, 120);
  const title = `swarm: ${firstLine}`;
  const limits = resolveSwarmLimits(input);
  await deps.ops.createOp({ id: opId, kind: 'swarm', title, input: { swarmId }, ribId: 'swarm', projectId: args.project?.id ?? null, steerable: true, temporalWorkflowId: workflowId });
  await deps.swarms.create({ id: swarmId, opId, task: input.task, input: { ...input, limits }, projectId: args.project?.id ?? null, busMode: args.bus.mode, busUrl: args.bus.url, temporalWorkflowId: workflowId });
  const wf: SwarmWorkflowInput = {
    swarmId,
    opId,
    limits,
    leadRole: 'the lead: plans the work, routes it to the agents, and reports the conclusion',
    agents: (input.agents ?? []).map((a) => ({ name: a.name, role: a.role })),
    writeMode: input.writeMode ?? false,
    workTools: input.workTools === 'READ' || (input.writeMode ?? false),
    ...(args.project ? { projectId: args.project.id, projectRoot: args.project.rootPath } : {}),
    ...(input.provider ? { provider: input.provider } : {}),
    ...(input.model ? { model: input.model } : {}),
    ...(input.workerModel ? { workerModel: input.workerModel } : {}),
    kickoff: kickoffText(input.task, input.evidence),
    heartbeatTimeoutMs: deps.heartbeatTimeoutMs,
    ...(args.continueAsNewAfterEvents !== undefined ? { continueAsNewAfterEvents: args.continueAsNewAfterEvents } : {}),
  };
  let firstRunId: string;
  try {
    ({ firstExecutionRunId: firstRunId } = await deps.temporal.workflow.start<typeof swarm>(workflowTypes.swarm, {
      taskQueue: deps.taskQueue,
      workflowId,
      args: [wf],
      typedSearchAttributes: keelsonSearchAttributes({ kind: workflowKinds.swarm, workflowName: workflowTypes.swarm, project: args.project?.name, rib: 'swarm' }),
      memo: { title, task: input.task.slice(0, 500), swarmId, opId },
      staticSummary: `${title.slice(0, 180)} · swarm ${swarmId.slice(0, 8)}`,
      staticDetails: [
        `**${title}**`,
        '',
        `- swarm: \`${swarmId}\`, op \`${opId}\``,
        ...(args.project ? [`- project: ${args.project.name}`] : []),
        `- agents: lead${(input.agents ?? []).map((a) => `, ${a.name}`).join('')}`,
        '',
        `GraphQL: \`{ swarm(id: "${swarmId}") { status turnsUsed conclusion agents { handle status } } }\``,
      ].join('\n'),
    }));
  } catch (err) {
    const message = (err as Error).message;
    await deps.ops.failToStart(opId, message);
    await deps.swarms.failToStart(swarmId, message);
    throw new MeshError('SERVICE_UNAVAILABLE', `swarm ${swarmId} could not start: ${message}`);
  }
  return { swarmId, opId, workflowId, firstRunId };
}
