import { MeshError, type TurnStatus } from '@keelson/schema';
import type { Places } from './places';
import { HOST, type HarnessStore, type SessionRecord } from './store';
import type { Turn, TurnControl, TurnOutcome, Turns } from './turn';

export interface SteeringDeps {
  store: HarnessStore;
  places: Places;
  turns: Turns;
}

/** Steering: a session's `sessionSteer` queue, each steer run once as the session's next turn. */
export class Steering {
  constructor(private readonly deps: SteeringDeps) {}

  /**
   * One steer of a session's `sessionSteer` queue, run as the session's next turn with the steer's
   * id as the turn id (the workflow's `sessionSteerTurn` activity). TURN_IN_FLIGHT (retried by
   * Temporal) while another turn holds the session. A steer is never started twice: when its turn
   * already left a trace (an earlier attempt, before a worker crash) the answer is how that turn
   * ended — LOST when it never completed.
   */
  async runTurn(record: SessionRecord, input: { steerId: string; text: string }, ctl: TurnControl): Promise<TurnOutcome> {
    const { places, turns } = this.deps;
    const earlier = await this.earlierTurn(record, input.steerId);
    if (earlier) return earlier;
    const beat = (turn: Turn | undefined) => ctl.heartbeat({ sessionId: record.id, pgid: turn?.proc.pgid ?? null });
    return turns.drive(ctl, beat, async () => {
      const holder = `steer:${input.steerId}:${ctl.attempt}:${HOST}:${process.pid}`;
      return turns.start(record, await places.cwdOf(record), { text: input.text, attachments: [], allowTools: [], holder, taskId: record.taskId, turnId: input.steerId });
    });
  }

  /** How the turn `turnId` of the session went, when it was started before; null when it never was. */
  private async earlierTurn(record: SessionRecord, turnId: string): Promise<TurnOutcome | null> {
    const { store } = this.deps;
    const outcome = (status: TurnStatus, error: string | null, result: string | null = null): TurnOutcome => ({ sessionId: record.id, turnId, status, result, error });
    if (record.turnId === turnId) {
      if (record.turnExpiresAt && record.turnExpiresAt.getTime() >= Date.now()) {
        throw new MeshError('TURN_IN_FLIGHT', `session ${record.id}: the steer's turn ${turnId} is still running (held by ${record.turnHolder})`, { turnId, holder: record.turnHolder });
      }
      const error = 'the process running this steer stopped renewing its lease; the steer is not run again';
      await store.completeTurn(record.id, turnId, { status: 'LOST', error });
      return outcome('LOST', error);
    }
    const trace = await store.turnTrace(record.id, turnId);
    if (trace.completed) return outcome(trace.completed.status, trace.completed.error ?? null, trace.completed.result ?? null);
    return trace.started ? outcome('LOST', 'the steer\'s turn started before and never completed; it is not run again') : null;
  }
}
