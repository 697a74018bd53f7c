import type { ErrorCode, RespondInput, RespondResult } from '@keelson/schema';

/** One launch of a run to start as its workflow (`dagRun`). */
export interface RunLaunchRequest {
  workflowId: string;
  runId: string;
  launch: number;
  workflowName: string;
  /** Shown as the memo title. */
  title: string;
  /** The project's name (searchable). */
  project: string | null;
  /** The rib that started the run, else the rib whose workflow it is (searchable). */
  rib: string | null;
  /** Who started it (a subject, for the operator's eyes). */
  startedBy?: string | null;
  heartbeatTimeoutMs: number;
  maxHistoryEvents?: number;
}

/** An op to start as its workflow (`durableOp`). */
export interface OpLaunchRequest {
  workflowId: string;
  opId: string;
  kind: string;
  title: string;
  project: string | null;
  rib: string | null;
  heartbeatTimeoutMs: number;
  maxHistoryEvents?: number;
}

/** A start: done, or why not (`alreadyRunning`: the workflow id still runs). */
export type LaunchOutcome =
  /** `executionId`: the executor's id of the execution it started (Temporal's run id). */
  | { ok: true; executionId: string }
  | { ok: false; alreadyRunning: boolean; message: string };

/** A gate answer sent to a run's workflow. */
export type GateOutcome =
  | { outcome: 'answered'; result: RespondResult }
  /** The workflow validated and refused it (stale pause, closed gate, a second answer). */
  | { outcome: 'rejected'; reason: string }
  | { outcome: 'not-running' }
  /** No worker answered in time. */
  | { outcome: 'timed-out' };

/** A steering note sent to an op's workflow. */
export type SteerOutcome =
  | { outcome: 'accepted' }
  /** The workflow answered no, with its reason (a swarm past its caps). */
  | { outcome: 'refused'; reason: string }
  | { outcome: 'not-running' }
  /** The workflow's Update failed with this code (CONFLICT unless it names one). */
  | { outcome: 'failed'; code: ErrorCode; message: string };

/**
 * What the runs domain asks of the executor that runs its workflows. `@keelson/temporal` implements
 * it over a Temporal client (`temporalRunsExecutor`); the runs domain never imports the executor.
 */
export interface RunsExecutor {
  /** The workflow id of a run: what operators see and search. */
  runWorkflowId(workflowName: string, runId: string): string;
  /** The workflow id of an op. */
  opWorkflowId(kind: string, opId: string): string;
  /** The workflow's page in the executor's UI, when that is known. */
  uiUrl(workflowId: string): string | null;
  startRun(req: RunLaunchRequest): Promise<LaunchOutcome>;
  startOp(req: OpLaunchRequest): Promise<LaunchOutcome>;
  /** Answers a gate through the run's workflow, waiting at most `timeoutMs` for a worker. */
  answerGate(workflowId: string, answer: RespondInput, opts: { updateId?: string; timeoutMs: number }): Promise<GateOutcome>;
  /** Requests cancellation; false when the workflow does not run. */
  cancel(workflowId: string): Promise<boolean>;
  /** Resolves once the workflow's current execution closed (or never ran); false after `timeoutMs`. */
  closed(workflowId: string, timeoutMs: number): Promise<boolean>;
  /** Sends one steering note to an op's workflow; the same `key` is one steer however often sent. */
  steerOp(op: { workflowId: string; kind: string }, note: string, key: string | null): Promise<SteerOutcome>;
  /** Sends one steering note to a running prompt node of a run's workflow (read between its tool rounds). */
  steerNode(workflowId: string, nodeId: string, note: string, key: string | null): Promise<SteerOutcome>;
}
