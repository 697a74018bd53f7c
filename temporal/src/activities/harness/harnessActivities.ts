import type { Actor } from '@keelson/schema';
import { asActor } from '../asActor';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import type { HarnessTaskResult, RunStatus, SessionSteerTurnResult, TurnStatus } from '@keelson/schema';
import { asActivity } from '../failures';

/** How one CLI turn of a task ended (the control plane's `TurnOutcome`). */
export interface HarnessTurnOutcome {
  sessionId: string | null;
  turnId: string;
  status: TurnStatus;
  result: string | null;
  error: string | null;
}

/**
 * What `harnessTask`'s activities need of the harness control plane (`@keelson/harness`'s
 * `HarnessControlPlane`), injected by the worker's owner.
 */
export interface HarnessTaskPlane {
  runTaskTurn(taskId: string, ctl: { attempt: number; signal: AbortSignal; heartbeat: (details: unknown) => void }): Promise<HarnessTurnOutcome>;
  settleTask(taskId: string, outcome: { status: TurnStatus | RunStatus; result?: string | null; error?: string | null }): Promise<unknown>;
  interruptTask(taskId: string): Promise<boolean>;
  runSteerTurn(input: { sessionId: string; steerId: string; text: string }, ctl: { attempt: number; signal: AbortSignal; heartbeat: (details: unknown) => void }): Promise<HarnessTurnOutcome>;
}

export interface HarnessActivityDeps {
  plane: HarnessTaskPlane;
}

export interface HarnessTaskSettleInput {
  taskId: string;
  status: TurnStatus | RunStatus;
  result?: string | null;
  error?: string | null;
}

/** The `harnessTask` workflow's activities. */
export function createHarnessActivities(deps?: HarnessActivityDeps) {
  const need = (): HarnessActivityDeps => {
    if (!deps) throw ApplicationFailure.nonRetryable('this worker was started without the harness control plane (ActivityDeps.harness)', 'SERVICE_UNAVAILABLE');
    return deps;
  };
  return {
    /**
     * The task's CLI turn: heartbeats every second; cancellation kills the CLI's process group; an
     * attempt that finds an earlier one still running fails TURN_IN_FLIGHT (retried), so a session
     * never runs two turns at once after a retry.
     */
    async harnessTaskTurn(input: { taskId: string }): Promise<HarnessTaskResult> {
      const { plane } = need();
      const activity = Context.current();
      const outcome = await asActivity(() =>
        plane.runTaskTurn(input.taskId, {
          attempt: activity.info.attempt,
          signal: activity.cancellationSignal,
          heartbeat: (details) => activity.heartbeat(details),
        }),
      );
      if (activity.cancellationSignal.aborted) throw new CancelledFailure(`task ${input.taskId} cancelled`);
      return { taskId: input.taskId, sessionId: outcome.sessionId, status: outcome.status, result: outcome.result, error: outcome.error };
    },

    /**
     * Cancellation's fast path: interrupts the task's turn through the control plane (its holder
     * kills the process group within about a second) instead of waiting for a heartbeat response.
     */
    async harnessTaskInterrupt(input: { taskId: string }): Promise<boolean> {
      const { plane } = need();
      return asActivity(() => plane.interruptTask(input.taskId));
    },

    /**
     * One steer of `sessionSteer`, run as the session's next turn with the steer's id as the turn id:
     * TURN_IN_FLIGHT (retried) while another turn holds the session; a steer whose turn already
     * started (an earlier attempt, before a worker crash) is never started again.
     */
    async sessionSteerTurn(input: { sessionId: string; steerId: string; text: string; actor?: Actor }): Promise<SessionSteerTurnResult> {
      const { plane } = need();
      const activity = Context.current();
      const { actor, ...steer } = input;
      const run = () => plane.runSteerTurn(steer, { attempt: activity.info.attempt, signal: activity.cancellationSignal, heartbeat: (details) => activity.heartbeat(details) });
      // The turn's events name who sent the steer, as they would had the caller started the turn.
      const outcome = await asActivity(() => asActor(actor, run));
      return { steerId: input.steerId, sessionId: outcome.sessionId, status: outcome.status, error: outcome.error };
    },

    /** The task's final status (first settle wins: retries change nothing). */
    async harnessTaskSettle(input: HarnessTaskSettleInput): Promise<void> {
      const { plane } = need();
      await asActivity(() => plane.settleTask(input.taskId, { status: input.status, result: input.result ?? null, error: input.error ?? null }));
    },
  };
}

export type HarnessActivities = ReturnType<typeof createHarnessActivities>;
