import type { Actor } from './auth';
/**
 * The harness control plane's names on the `harness` stream (key = canonical SessionId), shared by
 * the sessions subgraph, the worker's harness activities and readers of the stream (memory capture
 * reads `harnessCaptureEventTypes` and ignores the rest). Pure: no I/O.
 */

/**
 * The ten HarnessEvent kinds of the contract, as event types on the `harness` stream. Every one
 * carries {@link HarnessEventBase}; `TRANSCRIPT_APPENDED` (capture) is written to the same stream
 * but is not a client-facing HarnessEvent.
 */
export const harnessEventTypes = [
  'ASSISTANT_DELTA',
  'REASONING_DELTA',
  'TOOL_USE',
  'TOOL_RESULT',
  'APPROVAL_REQUEST',
  'APPROVAL_RESOLVED',
  'PROMPT_REQUEST',
  'PROMPT_ANSWERED',
  'SESSION_CREATED',
  'TURN_COMPLETE',
  'HARNESS_ERROR',
  'SESSION_UPDATED',
] as const;
export type HarnessEventType = (typeof harnessEventTypes)[number];

/** How a turn ended (`TurnComplete.status`). */
export const turnStatuses = ['COMPLETED', 'INTERRUPTED', 'FAILED', 'LOST'] as const;
export type TurnStatus = (typeof turnStatuses)[number];

/** A pending approval's answer. */
export const approvalDecisions = ['APPROVE', 'DENY'] as const;
export type ApprovalDecision = (typeof approvalDecisions)[number];

/** Longest text a delta, tool input or tool output carries in an event; longer is cut and flagged. */
export const HARNESS_EVENT_TEXT_LIMIT = 4096;

/** Fields every harness event payload carries (memory capture's base fields plus the mesh's own). */
export interface HarnessEventBase {
  /** The canonical SessionId (equal to the event key). */
  sessionId: string;
  harnessId: string;
  /** Per-session sequence minted by the mesh: 1, 2, 3, … in the order the session's events committed. */
  seq: number;
  /** The turn the event belongs to, if any. */
  turnId?: string | null;
  /** The task that spawned the session, if any. */
  taskId?: string | null;
}

export interface HarnessEventPayloads {
  ASSISTANT_DELTA: { text: string; messageId?: string | null; truncated?: boolean };
  REASONING_DELTA: { text: string; truncated?: boolean };
  TOOL_USE: { toolUseId: string; name: string; input: unknown; truncated?: boolean };
  TOOL_RESULT: { toolUseId: string; output: string; isError: boolean; truncated?: boolean };
  APPROVAL_REQUEST: { requestId: string; toolName: string; input: unknown; reason: string };
  APPROVAL_RESOLVED: { requestId: string; decision: ApprovalDecision };
  /** A question the CLI asked the user (not a tool permission): answered with `answerPrompt`. */
  PROMPT_REQUEST: { promptId: string; question: string; header?: string | null; options: { label: string; description?: string | null }[]; multiSelect: boolean };
  PROMPT_ANSWERED: { promptId: string; text: string };
  SESSION_CREATED: { projectId?: string | null; cwd?: string | null; title?: string | null; origin: string };
  TURN_COMPLETE: {
    status: TurnStatus;
    exitCode?: number | null;
    error?: string | null;
    /** The CLI's final answer text, cut to the text limit. */
    result?: string | null;
    durationMs?: number | null;
  };
  HARNESS_ERROR: { code: string; message: string };
  SESSION_UPDATED: { previousSessionId?: string | null; status?: string | null; title?: string | null };
}

export type HarnessEventPayload<T extends HarnessEventType = HarnessEventType> = HarnessEventBase & HarnessEventPayloads[T];

/** The `harnessTask` workflow's input (workflow id `harness-task-<taskId>`). */
export interface HarnessTaskInput {
  taskId: string;
  harnessId: string;
  projectId: string | null;
  /** The turn activity's heartbeat timeout. @default 30000 */
  heartbeatTimeoutMs?: number;
}

/** The `harnessTask` workflow's result. */
export interface HarnessTaskResult {
  taskId: string;
  sessionId: string | null;
  status: TurnStatus;
  result: string | null;
  error: string | null;
}

/**
 * `steerSession`'s answer: `ACCEPTED` into the live turn (a harness that takes input mid-turn),
 * `QUEUED` as a next turn of the session (run durably by its `sessionSteer` workflow), `REJECTED`
 * with the reason. Swarm and op steers answer `ACCEPTED` or `REJECTED`.
 */
export const steerStatuses = ['ACCEPTED', 'QUEUED', 'REJECTED'] as const;
export type SteerStatus = (typeof steerStatuses)[number];

/** Bounds of session steers. */
export const sessionSteerLimits = {
  /** Steers waiting in one session's queue (the one running included); more are rejected until it drains. */
  queued: 5,
  /** Longest steer text, in UTF-8 bytes. */
  textBytes: 16 * 1024,
  /** Characters of a caller's idempotency key (the Temporal update id that deduplicates it). */
  keyChars: 128,
  /** How long a drained queue's workflow waits for another steer before it ends. */
  idleMs: 60_000,
} as const;

/** The `sessionSteer` workflow's names (workflow id `session-steer-<sessionId>`). */
export const sessionSteerMessages = {
  /** Update: one steer text for the session's queue; validated (empty, too long, queue full → rejected). */
  steer: 'sessionSteer',
  /** Query: the queue as it stands. */
  status: 'sessionSteerStatus',
} as const;

/** The `sessionSteer` workflow's input. */
export interface SessionSteerInput {
  sessionId: string;
  harnessId: string;
  /** Steers carried over a continue-as-new, in order. */
  pending?: SessionSteerItem[];
  /** Steers delivered by earlier runs of this workflow id (continue-as-new). */
  delivered?: number;
  /** The turn activity's heartbeat timeout. @default 30000 */
  heartbeatTimeoutMs?: number;
}

/** One queued steer: its id is the turn id it runs as (at most one turn per steer). */
export interface SessionSteerItem {
  steerId: string;
  text: string;
  /** Who sent the steer: its turn's events name them. Absent on steers queued before actors were. */
  actor?: Actor;
}

/** The `sessionSteer` Update's answer. */
export interface SessionSteerAnswer {
  steerId: string;
  /** 1 = the next turn to run once the session is free. */
  position: number;
}

/** The `sessionSteerStatus` Query's answer. */
export interface SessionSteerState {
  sessionId: string;
  queued: SessionSteerItem[];
  running: string | null;
  delivered: number;
}

/** How the turn of one steer ended (`sessionSteerTurn` activity). */
export interface SessionSteerTurnResult {
  steerId: string;
  sessionId: string | null;
  status: TurnStatus;
  error: string | null;
}
