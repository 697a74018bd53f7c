import type { SteerOutcome } from '@keelson/runs';
import type { SwarmsExecutor } from '@keelson/swarms';
import { workflowKinds, workflowTypes, type TemporalTarget } from '@keelson/schema';
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { workflowUiUrl } from './client';
import { keelsonSearchAttributes } from './searchAttributeKeys';
import { launchOutcome, sendUpdate } from './executorCalls';
import { swarmLocalMessageSignal, swarmSteerUpdate, swarmStopSignal } from './workflows/swarmMessages';
import type { swarm, SwarmWorkflowInput } from './workflows';

/** `swarm-<swarm id>`: the swarm's one workflow, findable by id in the Temporal UI. */
export function swarmWorkflowId(swarmId: string): string {
  return `swarm-${swarmId}`;
}

/**
 * The one way a swarm is steered (the swarms service's `steerSwarm` and the runs domain's `steerOp`
 * on a swarm's op both come here): the swarm's `swarmSteer` Update, keyed so a repeat is one steer.
 */
export function steerSwarmWorkflow(handle: WorkflowHandle, note: string, key: string | null): Promise<SteerOutcome> {
  return sendUpdate<SteerOutcome>(key, async (updateId) => {
    const answer = await handle.executeUpdate(swarmSteerUpdate, { args: [note], updateId });
    return answer.accepted ? { outcome: 'accepted' } : { outcome: 'refused', reason: answer.reason ?? 'no reason given' };
  });
}

function staticDetails(req: Parameters<SwarmsExecutor['startSwarm']>[0]): string {
  const { plan } = req;
  return [
    `**${req.title}**`,
    '',
    `- swarm: \`${plan.swarmId}\`, op \`${plan.opId}\``,
    ...(req.project ? [`- project: ${req.project}`] : []),
    `- agents: lead${plan.agents.map((a) => `, ${a.name}`).join('')}`,
    '',
    `GraphQL: \`{ swarm(id: "${plan.swarmId}") { status turnsUsed conclusion agents { handle status } } }\``,
  ].join('\n');
}

/**
 * The swarms domain's executor over a Temporal client: one `swarm` workflow per swarm, with
 * `KeelsonKind=swarm`, `KeelsonRib=swarm` and `KeelsonProject`; stop, steer and local messages are
 * its signals and Update. `client` is awaited per call, so a subgraph may start before Temporal.
 */
export function temporalSwarmsExecutor(client: () => Promise<Client>, target: Omit<TemporalTarget, 'address'>): SwarmsExecutor {
  return {
    swarmWorkflowId,
    uiUrl: (workflowId) => (target.uiUrl ? workflowUiUrl(target.uiUrl, target.namespace, workflowId) : null),

    async startSwarm(req) {
      const input: SwarmWorkflowInput = req.plan;
      // Reaching Temporal is part of the start: a failure to connect fails the launch, not the caller.
      return launchOutcome(async () =>
        (await client()).workflow.start<typeof swarm>(workflowTypes.swarm, {
          taskQueue: target.taskQueue,
          workflowId: req.workflowId,
          args: [input],
          typedSearchAttributes: keelsonSearchAttributes({ kind: workflowKinds.swarm, workflowName: workflowTypes.swarm, project: req.project ?? undefined, rib: 'swarm' }),
          memo: { title: req.title, task: req.task.slice(0, 500), swarmId: req.plan.swarmId, opId: req.plan.opId },
          staticSummary: `${req.title.slice(0, 180)} · swarm ${req.plan.swarmId.slice(0, 8)}`,
          staticDetails: staticDetails(req),
        }),
      );
    },

    async stop(workflowId, reason) {
      try {
        await (await client()).workflow.getHandle(workflowId).signal(swarmStopSignal, { ...(reason ? { reason } : {}) });
        return true;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      }
    },

    async steer(workflowId, note, key) {
      return steerSwarmWorkflow((await client()).workflow.getHandle(workflowId), note, key);
    },

    async announce(workflowId, messageId) {
      await (await client()).workflow.getHandle(workflowId).signal(swarmLocalMessageSignal, { messageId });
    },
  };
}
