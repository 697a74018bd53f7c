export { route, mentionsIn } from './route';
export type { RoutableMessage, RouteAgent, RouteInput } from './route';
export {
  swarmStatuses,
  isTerminalSwarmStatus,
  swarmAgentStatuses,
  swarmBusModes,
  swarmMessages,
  swarmEventTypes,
  swarmTuning,
} from './names';
export type {
  SwarmStatus,
  SwarmAgentStatus,
  SwarmAgentView,
  SwarmBusMode,
  SwarmBusEventSignal,
  SwarmLocalMessageSignal,
  SwarmSteerResult,
  SwarmEventType,
  SwarmEventPayload,
  SwarmEventRecord,
} from './names';
export {
  swarmLimitBounds,
  swarmSizes,
  swarmInputBounds,
  agentNameSchema,
  evidenceItemSchema,
  startSwarmInputSchema,
  resolveSwarmLimits,
  tooLong,
} from './input';
export type { SwarmLimitName, SwarmLimits, SwarmSize, EvidenceItem, StartSwarmInput, ParsedStartSwarmInput, SwarmPlan } from './input';
