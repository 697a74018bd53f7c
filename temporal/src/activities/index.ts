import { Context } from '@temporalio/activity';
import { createChatActivities, type ChatActivityDeps } from './chat/chatActivities';
import { createHarnessActivities, type HarnessActivityDeps } from './harness/harnessActivities';
import { createMemoryActivities, type MemoryActivityDeps } from './memory/memoryActivities';
import { createOpActivities, type OpActivityDeps } from './ops/opActivities';
import { createRunActivities, type RunActivityDeps } from './runs/runActivities';
import { createSwarmActivities } from './swarm/swarmActivities';
import type { SwarmActivityDeps } from './swarm/swarmTypes';

/**
 * What the activities reach the world through, injected by the worker's owner (`openActivityDeps`
 * for a worker process, `startMesh` in-process). Each part is optional: a worker without it fails
 * those activities with SERVICE_UNAVAILABLE instead of crashing.
 */
export interface ActivityDeps {
  /** Run state (Postgres), worktree leases, the prompt-node executor. */
  runs?: RunActivityDeps;
  /** Op state and frames, the op kinds this worker runs. */
  ops?: OpActivityDeps;
  /** The harness control plane (`harnessTask`'s CLI turns). */
  harness?: HarnessActivityDeps;
  /** The memory subgraph and the provider registry (`memoryCompaction`'s summaries). */
  memory?: MemoryActivityDeps;
  /** The swarm domain, the bus and agent turns (`swarm`). */
  swarm?: SwarmActivityDeps;
  /** The chat tables and agent turns (`chat`). */
  chat?: ChatActivityDeps;
}

export interface EchoInput {
  message: string;
}

export interface EchoOutput {
  /** The message, upper-cased, so a caller can tell it went through the activity. */
  echoed: string;
  /** 1 on the first try; larger when Temporal retried the activity. */
  activityAttempt: number;
}

/** The activity implementations the worker registers; their names are the keys of the returned object. */
export function createActivities(deps: ActivityDeps = {}) {
  return {
    /** Echoes the message back upper-cased, with the attempt number of this execution. */
    async echo({ message }: EchoInput): Promise<EchoOutput> {
      return { echoed: message.toUpperCase(), activityAttempt: Context.current().info.attempt };
    },
    ...createRunActivities(deps.runs),
    ...createOpActivities(deps.ops),
    ...createHarnessActivities(deps.harness),
    ...createMemoryActivities(deps.memory),
    ...createSwarmActivities(deps.swarm),
    ...createChatActivities(deps.chat),
  };
}

/** The activity interface workflows proxy (`proxyActivities<Activities>`). */
export type Activities = ReturnType<typeof createActivities>;

export type { RunActivityDeps, RunActivities, PromptNodeExecutor, PromptNodeRequest, PromptNodeResult, NodeOutcome } from './runs/runActivities';
export type { OpActivityDeps, OpActivities } from './ops/opActivities';
export type { OpContext, OpImplementation, OpRegistry } from './ops/opTypes';
export type { RunArtifact } from '@keelson/ribs-contract';
export { builtinOps, countdownOp } from './ops/countdown';
export type { HarnessActivityDeps, HarnessTaskPlane, HarnessTurnOutcome, HarnessActivities } from './harness/harnessActivities';
export type { MemoryActivityDeps, MemoryActivities, SummaryModelChoice, SummarizeRangeResult } from './memory/memoryActivities';
export type { MemoryApi, CompactionRange, RangeContent, RangeMessage, SavedSummary } from './memory/memoryApi';
export type { SwarmActivities } from './swarm/swarmActivities';
export type { SwarmActivityDeps, SwarmTurnInput, SwarmTurnResult, SwarmBootResult, HydratedMessage } from './swarm/swarmTypes';
export { createSwarmActivities } from './swarm/swarmActivities';
export { tokenNonce } from './swarm/swarmContext';
export type { ChatActivityDeps, ChatActivities } from './chat/chatActivities';
