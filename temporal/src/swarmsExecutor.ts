import { randomUUID } from 'node:crypto';
import type { SteerOutcome } from '@keelson/runs';
import type { SwarmsExecutor } from '@keelson/swarms';
import { errorCodeSchema, workflowKinds, workflowTypes, type TemporalTarget } from '@keelson/schema';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { workflowUiUrl } from './client';
import { keelsonSearchAttributes } from './searchAttributeKeys';
import { STEER_KEY_PREFIX } from './workflows/steerableOp';
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
export async function steerSwarmWorkflow(handle: WorkflowHandle, note: string, key: string | null): Promise<SteerOutcome> {
  const updateId = key ? `${STEER_KEY_PREFIX}${key}` : randomUUID();
  try {
    const answer = await handle.executeUpdate(swarmSteerUpdate, { args: [note], updateId });
    return answer.accepted ? { outcome: 'accepted' } : { outcome: 'refused', reason: answer.reason ?? 'no reason given' };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { outcome: 'not-running' };
    if (err instanceof WorkflowUpdateFailedError) {
      const cause = err.cause;
      const code = errorCodeSchema.safeParse(cause instanceof ApplicationFailure ? cause.type : undefined);
      return { outcome: 'failed', code: code.success ? code.data : 'CONFLICT', message: cause?.message ?? err.message };
    }
    throw err;
  }
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
      try {
        const handle = await (await client()).workflow.start<typeof swarm>(workflowTypes.swarm, {
          taskQueue: target.taskQueue,
          workflowId: req.workflowId,
          args: [input],
          typedSearchAttributes: keelsonSearchAttributes({ kind: workflowKinds.swarm, workflowName: workflowTypes.swarm, project: req.project ?? undefined, rib: 'swarm' }),
          memo: { title: req.title, task: req.task.slice(0, 500), swarmId: req.plan.swarmId, opId: req.plan.opId },
          staticSummary: `${req.title.slice(0, 180)} · swarm ${req.plan.swarmId.slice(0, 8)}`,
          staticDetails: staticDetails(req),
        });
        return { ok: true, executionId: handle.firstExecutionRunId };
      } catch (err) {
        return { ok: false, alreadyRunning: err instanceof WorkflowExecutionAlreadyStartedError, message: (err as Error).message };
      }
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
