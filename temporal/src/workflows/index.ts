// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// Lint forbids I/O, clocks and randomness here; reach them through activities.
import { proxyActivities } from '@temporalio/workflow';
import type { Activities, EchoInput, EchoOutput } from '../activities';

export { dagRun } from './dagRun';
export type { DagRunInput, DagRunResult, CarriedDagState, NodeState } from './dagRun';
export { durableOp } from './durableOp';
export type { DurableOpInput, DurableOpResult } from './durableOp';
export { opWork } from './opWork';
export type { OpWorkInput, OpWorkKind } from './opWork';
export type { CarriedOpState } from './steerableOp';

const { echo } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 3 },
});

/** The proof workflow: one activity round trip through the worker and back (`workflowTypes.echo`). */
export async function echoWorkflow(input: EchoInput): Promise<EchoOutput> {
  return await echo({ message: input.message });
}

export { harnessTask } from './harnessTask';
export * from './ribWorkflows';
export * from './memoryCompaction';
export { swarm } from './swarm';
export type { SwarmWorkflowInput, SwarmWorkflowResult, CarriedSwarmState, AgentState } from './swarmState';
export { sessionSteer } from './sessionSteer';
export { chat } from './chat';
export type { ChatWorkflowInput, ChatWorkflowResult } from './chat';
