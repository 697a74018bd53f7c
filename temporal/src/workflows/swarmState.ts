// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The swarm workflow's state (carried across continue-as-new) and its small pure helpers: the
// projection it records, the status it answers. The state's transitions are swarmRun.ts.
import type { SwarmAgentView, SwarmEventPayload, SwarmEventType, SwarmLimits, SwarmPlan, SwarmStatus } from '@keelson/schema';
import type { SwarmLiveStatus } from './swarmMessages';
import type { SwarmBootResult, SwarmTurnResult, WriterLease } from '../activities/swarm/swarmTypes';

/** The `swarm` workflow's input: the swarm's plan, and the state a continue-as-new carries over. */
export interface SwarmWorkflowInput extends SwarmPlan {
  /** The state a continue-as-new carries over. */
  carried?: CarriedSwarmState;
}

export interface SwarmWorkflowResult {
  swarmId: string;
  status: SwarmStatus;
}

export interface BackgroundLine {
  messageId: string;
  threadRootId: string;
  author: string;
  preview: string;
}

/** An agent: an identity (bot and token ids, never a token), an inbox, a resumable session; what reads see of it is {@link projection}. */
export interface AgentState extends Pick<SwarmAgentView, 'id' | 'handle' | 'displayName' | 'role' | 'lead' | 'writer' | 'status' | 'finished' | 'turns' | 'usage'> {
  botUserId: string;
  botId: string;
  tokenIds: string[];
  failures: number;
  sessionId?: string;
  model?: string;
  inbox: string[];
  background: BackgroundLine[];
  notes: string[];
  /** Turns whose attempt never reported (cancelled or given up): a token they minted is swept at the end. */
  unsettled: { turnNo: number; generation: number }[];
  /** A writer's worktree lease (write mode). */
  worktree?: WriterLease;
}

/** Write mode's base (as `swarmWriteBase` decided it). */
export interface CarriedWriteBase {
  origin: boolean;
  branch: string;
  remoteRef?: string;
}

export interface CarriedSwarmState {
  booted: boolean;
  deadlineMs: number;
  channel?: SwarmBootResult;
  agents: AgentState[];
  threads: Record<string, { starter?: string; participants: string[] }>;
  seen: string[];
  ownPosts: string[];
  cursor?: string;
  queue: string[];
  turnsUsed: number;
  nudges: number;
  conclusion?: string;
  /** Events recorded so far (the next event's index). */
  eventSeq: number;
  steers: number;
  runs: number;
  /** Write mode: where writers branch from, and what chat_merge landed or refused. */
  writeBase?: CarriedWriteBase;
  merges?: { agent: string; sha: string; result: string; landed: boolean }[];
}

export interface FinishedTurn {
  agentId: string;
  turnNo: number;
  generation: number;
  batch: string[];
  notes: string[];
  result?: SwarmTurnResult;
  error?: unknown;
}

/** The workflow sandbox's Date is the workflow clock: recorded on first run, replayed after. */

export const now = () => new Date().getTime();

export const failureMessage = (err: unknown): string => {
  let cause: unknown = err;
  while (cause instanceof Error && cause.cause instanceof Error) cause = cause.cause;
  return cause instanceof Error ? cause.message : String(err);
};

export type Emit = (type: SwarmEventType, payload: Omit<SwarmEventPayload, 'swarmId'>) => void;

/** Whether an agent still takes turns. */
export const active = (a: AgentState) => a.status !== 'CAPPED' && a.status !== 'FAILED';

export const rosterLines = (agents: AgentState[]) =>
  agents.map((a) => ({ id: a.id, handle: a.handle, role: a.role, lead: a.lead, writer: a.writer, status: a.status, finished: a.finished }));

/** The agents as `swarmRecord` stores them. */
export const projection = (agents: AgentState[]): SwarmAgentView[] =>
  agents.map((a) => ({
    id: a.id,
    handle: a.handle,
    displayName: a.displayName,
    role: a.role,
    lead: a.lead,
    writer: a.writer,
    status: a.status,
    finished: a.finished,
    turns: a.turns,
    inboxDepth: a.inbox.length,
    sessionId: a.sessionId ?? null,
    model: a.model ?? null,
    botUserId: a.botUserId,
    worktree: a.worktree ?? null,
    usage: { ...a.usage },
  }));

/** What one turn takes from its agent's queues (and the model it runs on). */
export interface TurnBatch {
  turnNo: number;
  batch: string[];
  background: BackgroundLine[];
  notes: string[];
  model: string | undefined;
}

/** A new swarm's state (`now()` is the workflow's deterministic clock). */
export const freshState = (limits: SwarmLimits): CarriedSwarmState => ({
  booted: false,
  deadlineMs: now() + limits.maxMinutes * 60_000,
  agents: [],
  threads: {},
  seen: [],
  ownPosts: [],
  queue: [],
  turnsUsed: 0,
  nudges: 0,
  eventSeq: 0,
  steers: 0,
  runs: 0,
});

/** The `swarmStatus` query's answer. */
export const liveStatus = (swarmId: string, status: SwarmStatus, st: CarriedSwarmState, busy: number): SwarmLiveStatus => ({
  swarmId,
  status,
  turnsUsed: st.turnsUsed,
  queued: st.queue.length,
  busy,
  nudges: st.nudges,
  concluded: st.conclusion !== undefined,
  agents: st.agents.map((a) => ({ id: a.id, status: a.status, turns: a.turns, inboxDepth: a.inbox.length })),
});
