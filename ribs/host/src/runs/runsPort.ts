import type { RunArtifact, RunCheckout } from '@keelson/ribs-contract';

/** A run's status as the runs domain stores it. */
export type RunsPortStatus = 'RUNNING' | 'PAUSED' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

/** One node of a run. */
export interface RunsPortNode {
  id: string;
  type: string;
  status: string;
  output: string | null;
  error: string | null;
}

/** What the seams read of a run. */
export interface RunsPortRun {
  id: string;
  workflowName: string;
  status: RunsPortStatus;
  launch: number;
  inputs: Record<string, string>;
  /** ISO-8601. */
  startedAt: string;
  completedAt: string | null;
  error: string | null;
  /** The rib whose workflow it is. */
  ribId: string | null;
  /** The rib that started it through `startWorkflow` / `runWorkflow` / `refreshWorkflow`. */
  startedByRibId: string | null;
  projectId: string | null;
  nodes: RunsPortNode[];
  /** The oldest open gate. */
  pendingApproval: { nodeId: string; prompt: string; pauseId: string; artifacts: RunArtifact[] } | null;
  checkout: RunCheckout | null;
  temporalWorkflowId: string;
}

/** An event of the `runs` (or `ops`) stream, ids and small facts only. */
export interface RunsPortEvent {
  cursor: string;
  type: string;
  payload: Record<string, unknown>;
  /** ISO-8601. */
  at: string;
}

/** An op as the run tools show it. */
export interface RunsPortOp {
  id: string;
  kind: string;
  title: string | null;
  status: RunsPortStatus;
  result: unknown;
  error: string | null;
  steerable: boolean;
  ribId: string | null;
  projectId: string | null;
  temporalWorkflowId: string;
}

/** Never a throw for a gate or run problem: `{ ok: false, error }`. */
export type RunsPortAnswer = { ok: true } | { ok: false; error: string };

/**
 * The runs domain as the run seams reach it (the runs subgraph's services in-process). Methods that
 * start, cancel or answer reject with `MeshError` (NOT_FOUND, BAD_USER_INPUT, CONFLICT,
 * SERVICE_UNAVAILABLE) where the seam contract says "rejects"; reads resolve undefined for unknown ids.
 */
export interface RunsPort {
  /** Starts a catalog workflow (resolved in the project's scope); resolves once registered and started. */
  start(req: { name: string; inputs?: Record<string, string>; projectId?: string; startedByRibId: string | null }): Promise<{ runId: string }>;
  /**
   * Starts an in-memory definition (already validated by the caller) at `cwd` (default the Keelson
   * home); `ribId` is whose definition it is, `startedByRibId` who asked.
   */
  startDefinition(req: {
    definition: unknown;
    inputs?: Record<string, string>;
    cwd?: string;
    ribId: string | null;
    startedByRibId: string | null;
    /** `RIB` for a rib's own definition, `BUNDLED` for one the host supplies (policy approvals). */
    scope: 'RIB' | 'BUNDLED';
    title?: string;
  }): Promise<{ runId: string }>;
  /** The run, or undefined for an unknown id (a malformed one included). */
  get(runId: string): Promise<RunsPortRun | undefined>;
  /** A pause of the run, open or closed. */
  pause(runId: string, pauseId: string): Promise<{ nodeId: string; prompt: string } | undefined>;
  /**
   * Resolves once the run waits at a gate: the pause and the inbox approval that answers it (null
   * where it has none). Rejects CONFLICT when the run settles first; an abort rejects.
   */
  gate(runId: string, signal?: AbortSignal): Promise<{ pauseId: string; approvalId: string | null }>;
  /** Resolves once the run's current launch settled (SUCCEEDED, FAILED or CANCELLED); an abort rejects. */
  settled(runId: string, signal?: AbortSignal): Promise<RunsPortRun>;
  cancel(runId: string): Promise<RunsPortAnswer>;
  /** Answers a gate through the run's `respond` Update. */
  respond(req: { runId: string; nodeId: string; text: string; pauseId?: string }): Promise<RunsPortAnswer>;
  /** Events of one run after `after` (oldest first). */
  runEvents(runId: string, after: string | undefined, limit: number): Promise<RunsPortEvent[]>;

  op(opId: string): Promise<RunsPortOp | undefined>;
  /** Frames of one op after `after` (oldest first). */
  opFrames(opId: string, after: string | undefined, limit: number): Promise<RunsPortEvent[]>;
  /** Cancels a running op (CONFLICT once it finished; a cancelled op is returned as is). */
  cancelOp(opId: string): Promise<RunsPortOp>;
  /** Steers a running steerable op (CONFLICT once it finished, CAPABILITY_UNSUPPORTED when not steerable). */
  steerOp(opId: string, note: string): Promise<RunsPortOp>;
}
