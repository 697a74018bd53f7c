import { runLimits } from '@keelson/schema';

/** The state of a run. */
export type RibRunState = 'running' | 'paused' | 'succeeded' | 'failed' | 'cancelled';

/** The longest approval answer `respondToRun` accepts, in bytes (`runLimits.answerBytes`: one source). */
export const RESPOND_TO_RUN_MAX_BYTES = runLimits.answerBytes;

/** How many run files a paused gate's artifacts carry, and how long each may be (`runLimits`). */
export const RUN_ARTIFACT_LIMITS = { files: runLimits.artifactFiles, chars: runLimits.artifactChars } as const;

/** A run file a gate's prompt names as `$ARTIFACTS_DIR/<path>`. */
export interface RunArtifact {
  path: string;
  text?: string;
  truncated?: boolean;
  error?: string;
}

/** The human gate a paused run waits on; pass `pauseId` back so a late answer cannot resolve a later pause. */
export interface RibPendingApproval {
  nodeId: string;
  prompt: string;
  pauseId?: string;
  artifacts?: readonly RunArtifact[];
}

/** A run's managed checkout; path and branch read null once a finished run's worktree is cleaned up. */
export interface RunCheckout {
  path: string | null;
  branch: string | null;
  worktreeEstablished: boolean;
}

/** One node of a run. */
export interface RunNodeView {
  id: string;
  status: string;
  output?: string;
  error?: string;
}

/** What `RibContext.getRunStatus` returns for a run the rib started or owns. */
export interface RibRunStatus {
  runId: string;
  workflowName: string;
  status: RibRunState;
  pendingApproval?: RibPendingApproval;
  checkout?: RunCheckout;
  nodes: readonly RunNodeView[];
  error?: string;
}

/**
 * A run-lifecycle notification for `onRunEvent`: one `running` per launch and one terminal event
 * when it settles (plus pause transitions for the rib that started the run).
 */
export interface RibRunEvent {
  workflowName: string;
  runId: string;
  status: RibRunState;
  inputs: Readonly<Record<string, unknown>>;
  startedAt: string;
  completedAt?: string;
  error?: string;
  pendingApproval?: { nodeId: string; prompt: string };
  startedByRibId?: string;
}

/** The outcome of `cancelRun`; never a throw. */
export type CancelRunResult = { ok: true } | { ok: false; error: string };

/** The outcome of `respondToRun`; never a throw. */
export type RespondToRunResult = { ok: true } | { ok: false; error: string };
