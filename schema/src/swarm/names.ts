/**
 * Names and shapes the swarm workflow, its activities, the swarms subgraph and the swarm rib share
 * (schema/PROTOCOL.md "Swarms"). Pure: the workflow sandbox imports it.
 */

/** A swarm's status (`SwarmStatus` in the contract). */
export const swarmStatuses = ['RUNNING', 'DONE', 'STALLED', 'EXHAUSTED', 'STOPPED', 'ERROR'] as const;
export type SwarmStatus = (typeof swarmStatuses)[number];
export const isTerminalSwarmStatus = (s: string): boolean => s !== 'RUNNING' && (swarmStatuses as readonly string[]).includes(s);

/** An agent's status (`SwarmAgentStatus`). */
export const swarmAgentStatuses = ['IDLE', 'BUSY', 'CAPPED', 'FAILED'] as const;
export type SwarmAgentStatus = (typeof swarmAgentStatuses)[number];

/** An agent as reads see it (the swarm workflow's projection, as the swarm store keeps it; no secret ever). */
export interface SwarmAgentView {
  id: string;
  handle: string;
  displayName: string;
  role: string;
  lead: boolean;
  writer: boolean;
  status: SwarmAgentStatus;
  /** The agent declared its part done (`chat_done`). */
  finished: boolean;
  turns: number;
  inboxDepth: number;
  /** The provider session its turns resume (`<provider>:<uuid>`). */
  sessionId: string | null;
  model: string | null;
  botUserId: string | null;
  worktree: { leaseId: string; path: string; branch: string } | null;
  usage: { inputTokens: number; outputTokens: number };
}


/** Where the bus is (`SwarmBusMode`). */
export const swarmBusModes = ['MANAGED', 'EXTERNAL', 'UNAVAILABLE'] as const;
export type SwarmBusMode = (typeof swarmBusModes)[number];

/** The swarm workflow's Temporal messages (besides the op's `steer` Signal, which it also accepts). */
export const swarmMessages = {
  /** Signal, id-only: a bus event of the swarm's channel, from the tail activity (at-least-once). */
  busEvent: 'swarmBusEvent',
  /** Signal, id-only: a message the swarm itself just wrote (an agent tool, postToSwarm), ingested at once. */
  localMessage: 'swarmLocalMessage',
  /** Update: the operator's note, posted into the channel as the operator; rejected once the swarm ended. */
  steer: 'swarmSteer',
  /** Signal: stop the swarm (`stopSwarm`, `chat_swarm_stop`), with the operator's reason; `cancelOp` cancels it the same way. */
  stop: 'swarmStop',
  /** Query: the live summary. */
  status: 'swarmStatus',
} as const;

/** `swarmBusEvent` argument: ids and a cursor, never a body. */
export interface SwarmBusEventSignal {
  eventId: string;
  cursor: string;
  type: 'message.created' | 'thread.reply_created';
  messageId: string;
  /** Set on `thread.reply_created`. */
  rootId?: string;
}

/** `swarmLocalMessage` argument. */
export interface SwarmLocalMessageSignal {
  messageId: string;
}

/** `swarmSteer` answer. */
export interface SwarmSteerResult {
  accepted: boolean;
  reason?: string;
  /** The operator's post, when accepted. */
  messageId?: string;
}

/** The `swarms` stream's event types (key = swarm id), each carrying ids only. */
export const swarmEventTypes = [
  'SWARM_STARTED',
  'AGENT_JOINED',
  'MESSAGE_INGESTED',
  'TURN_STARTED',
  'TURN_ENDED',
  'AGENT_RETIRED',
  'SWARM_NUDGED',
  'SWARM_CONCLUDED',
  'SWARM_ENDED',
] as const;
export type SwarmEventType = (typeof swarmEventTypes)[number];

/** Payload of a `swarms` stream event: ids and small facts, never a message body. */
export interface SwarmEventPayload {
  swarmId: string;
  agentId?: string;
  messageId?: string;
  threadRootId?: string;
  /** The bus user who wrote the message. */
  authorId?: string;
  /** The agent who wrote it, when one of the roster did. */
  authorAgentId?: string;
  /** MESSAGE_INGESTED: the agents the message woke (route()'s answer). */
  woke?: string[];
  turnNo?: number;
  /** TURN_STARTED: the batch the turn carries. */
  messageIds?: string[];
  /** TURN_ENDED: ok | timeout | error | interrupted. SWARM_ENDED: the final SwarmStatus. */
  status?: string;
  /** At most 500 characters. */
  reason?: string;
  nudge?: number;
  lead?: boolean;
  writer?: boolean;
  handle?: string;
}

/** A swarm event as the workflow hands it to the recording activity. */
export interface SwarmEventRecord {
  type: SwarmEventType;
  payload: SwarmEventPayload;
}

/** Limits and delays the engine applies. */
export const swarmTuning = {
  /** Nothing busy or pending for this long before concluding, nudging or stalling. */
  quiescenceMs: 1500,
  /** Nudges the lead gets before a quiet swarm ends STALLED. */
  maxNudges: 2,
  /** Failed turns in a row that retire an agent (the lead's end the swarm). */
  maxFailures: 3,
  /** Thread replies kept per agent as background (ids plus a preview). */
  backgroundSize: 12,
  /** Turns running at once. */
  maxConcurrentTurns: 4,
  /** Characters of a message preview (the background line). */
  previewChars: 200,
  /** Seen message ids a workflow keeps (the newest; continue-as-new carries them). */
  seenLimit: 5000,
} as const;
