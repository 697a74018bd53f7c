import type { LaunchOutcome, SteerOutcome } from '@keelson/runs';
import type { SwarmPlan } from '@keelson/schema';

/** What a swarm's workflow starts from (declared in @keelson/schema, which the workflow may import). */
export type { SwarmPlan };

/** One swarm to start as its workflow (`swarm`). */
export interface SwarmLaunchRequest {
  workflowId: string;
  /** Shown as the memo title. */
  title: string;
  /** The task (its start, for the memo). */
  task: string;
  /** The project's name (searchable), when the swarm has one. */
  project: string | null;
  plan: SwarmPlan;
}

/**
 * What the swarms domain asks of the executor that runs its workflows. `@keelson/temporal`
 * implements it (`temporalSwarmsExecutor`); the swarms domain never imports the executor.
 */
export interface SwarmsExecutor {
  /** The workflow id of a swarm: what operators see and search. */
  swarmWorkflowId(swarmId: string): string;
  /** The workflow's page in the executor's UI, when that is known. */
  uiUrl(workflowId: string): string | null;
  startSwarm(req: SwarmLaunchRequest): Promise<LaunchOutcome>;
  /** Asks the swarm to stop (its turns interrupted, its tokens revoked); false when it does not run. */
  stop(workflowId: string, reason: string | null): Promise<boolean>;
  /** The operator's note to the lead; the same `key` is one steer however often sent. */
  steer(workflowId: string, note: string, key: string | null): Promise<SteerOutcome>;
  /** Tells the workflow the mesh just wrote this message into the channel (it need not wait for the tail). */
  announce(workflowId: string, messageId: string): Promise<void>;
}
