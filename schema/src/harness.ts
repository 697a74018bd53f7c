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
