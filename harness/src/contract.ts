import type { ApprovalDecision, HarnessEventPayloads, HarnessEventType, TurnStatus } from '@keelson/schema';
import type { HarnessId, SessionId } from './ids';

/** What a harness can do on this node, computed at read time (never aspirations). */
export interface HarnessCapabilities {
  interrupt: boolean;
  resume: boolean;
  approvals: boolean;
  liveStream: boolean;
  listSessions: boolean;
  startSession: boolean;
  attachments: boolean;
  /** Input reaches a running turn: `steerSession` answers ACCEPTED instead of QUEUED. */
  midTurnInput: boolean;
  /** A tool that needs permission waits for `answerApproval` before it runs, in the same turn (else the CLI goes on without it and an approval re-runs it later). */
  approvalsBeforeTool: boolean;
}
export type CapabilityName = keyof HarnessCapabilities;
export const capabilityNames: readonly CapabilityName[] = ['interrupt', 'resume', 'approvals', 'liveStream', 'listSessions', 'startSession', 'attachments', 'midTurnInput', 'approvalsBeforeTool'];

/** The capabilities with a reason for every flag that is false. */
export interface CapabilityReport {
  harnessId: HarnessId;
  installed: boolean;
  /** The CLI's version when installed from npm (its package.json). */
  version: string | null;
  flags: HarnessCapabilities;
  reasons: Partial<Record<CapabilityName, string>>;
}

/** Whether a harness can run tasks (`runTask`), and why not. */
export interface TaskExecutorInfo {
  implemented: boolean;
  reason: string | null;
}

/** A session as a harness's native store (or the mesh) knows it. */
export interface SessionSummary {
  sessionId: SessionId;
  harnessId: HarnessId;
  nativeId: string;
  cwd: string | null;
  title: string | null;
  createdAt: Date | null;
  updatedAt: Date | null;
}

/** One final entry of a native transcript (the shape memory capture stores). */
export interface TranscriptEntry {
  /** The native entry id: stable across reads, unique within the session. */
  id: string;
  /** `user`, `assistant`, `tool` or `system`. */
  role: string;
  content: string;
  toolCalls?: { id: string; name: string; input: unknown }[] | null;
  createdAt: Date | null;
  metadata?: Record<string, unknown> | null;
}

/** Where a new session's turns run: its project's root, or one of the project's live worktree leases. */
export interface StartSessionOpts {
  projectId: string;
  workspaceId?: string | null;
  title?: string | null;
}

export interface UserTurn {
  text: string;
  /** Absolute paths already confined to the turn's cwd by the caller. */
  attachments?: string[];
}

/**
 * One event a driver derives from its CLI's output, before the mesh stamps it with a session, a
 * per-session sequence and a cursor.
 */
export type DriverEvent = {
  [T in Exclude<HarnessEventType, 'SESSION_CREATED' | 'SESSION_UPDATED' | 'TURN_COMPLETE' | 'APPROVAL_RESOLVED' | 'PROMPT_ANSWERED'>]: { type: T } & HarnessEventPayloads[T];
}[Exclude<HarnessEventType, 'SESSION_CREATED' | 'SESSION_UPDATED' | 'TURN_COMPLETE' | 'APPROVAL_RESOLVED' | 'PROMPT_ANSWERED'>];

/** The mesh-side event of a session, as clients receive it. */
export interface HarnessEvent<T extends HarnessEventType = HarnessEventType> {
  cursor: string;
  type: T;
  sessionId: SessionId;
  harnessId: HarnessId;
  seq: number;
  turnId: string | null;
  taskId: string | null;
  at: Date;
  payload: HarnessEventPayloads[T];
}

export type { ApprovalDecision, TurnStatus };

/**
 * The seed's control-plane contract for one harness. The mesh's implementation is
 * {@link HarnessControlPlane.driver}: per-harness CLI knowledge ({@link CliDriver}) plus the
 * control plane's durable state (leases, events, aliases) shared by every process.
 * Unsupported operations reject with `CAPABILITY_UNSUPPORTED` (501) and the reason.
 */
export interface HarnessDriver {
  readonly harnessId: HarnessId;
  /** Computed when read. */
  capabilities(): Promise<HarnessCapabilities>;
  startSession(opts: StartSessionOpts): Promise<SessionSummary>;
  resumeSession(sessionId: SessionId): Promise<SessionSummary>;
  interrupt(sessionId: SessionId): Promise<void>;
  sendUserTurn(sessionId: SessionId, turn: UserTurn): Promise<void>;
  resolveApproval(sessionId: SessionId, requestId: string, decision: ApprovalDecision): Promise<void>;
  /** Follows one session live (from now); returns the unsubscribe function. */
  subscribe(sessionId: SessionId, sink: (e: HarnessEvent) => void): () => void;
  /** Follows every session of this harness live (from now). */
  subscribeEvents(sink: (e: HarnessEvent) => void): () => void;
  listSessions(): Promise<SessionSummary[]>;
  getSession(sessionId: SessionId): Promise<SessionSummary | null>;
}
