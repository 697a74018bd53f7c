import type { Rib } from '@keelson/shared';
import { agentTools } from './tools/agentTools';

export { ClickClackClient, ClickClackError } from './bus/clickclack';
export type { ClickClackClientOptions, MintedToken, MessagePage, BusSubscription } from './bus/clickclack';
export type { BusEvent, BusMessage, BusUser } from './bus/wire';
export { resolveBusSetup, whichClickclack, DEFAULT_CLICKCLACK_PORT, NO_BINARY_REASON } from './bus/busSetup';
export type { BusSetup } from './bus/busSetup';
export { ManagedBus, childEnv } from './bus/managedBus';
export type { ManagedBusOptions, ManagedBusStatus, BusProcessRecord } from './bus/managedBus';
export { ownsProcess, processAlive } from './bus/processes';
export { startStandin, STANDIN_VERSION } from './standin/server';
export type { RunningStandin, StandinServerOptions } from './standin/server';

export const RIB_ID = 'swarm';

const rib: Rib = {
  id: RIB_ID,
  displayName: 'Swarm',
  registerTools: () => agentTools(),
};

export default rib;

// The engine: what the swarm workflow's activities run in a worker.
export { TokenVault, processVault } from './engine/tokenVault';
export type { HeldToken } from './engine/tokenVault';
export { BusAccess } from './engine/busAccess';
export { TurnSession, BusFailure, bindTurn, turnOf, TURN_CONTEXT_KEY } from './engine/turnSession';
export type { SwarmCommand, RosterLine, TurnSessionOptions } from './engine/turnSession';
export { systemPrompt, turnPrompt, kickoffText } from './engine/prompt';
export type { BackgroundPreview, SystemPromptInput, TurnPromptInput } from './engine/prompt';
export { agentTools, renderMessage, AGENT_TOOL_NAMES, LEAD_TOOL_NAMES, MERGE_TOOL_NAME, AGENT_POST_CHARS, CONCLUSION_CHARS } from './tools/agentTools';

// The swarm domain's state (Postgres).
export { SwarmStore } from './store/swarmStore';
export type { SwarmAgentView, NewSwarm, SwarmRecord, SwarmStateUpdate, TurnRecord, TurnClaim } from './store/swarmStore';
export { SwarmTables1764460800600 } from './store/swarmTables.migration';
