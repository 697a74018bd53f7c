// Deterministic code only: this module runs in the workflow sandbox and is replayed from history.
// The state of one op workflow execution and its pure steps (no Temporal API but the pure
// `ApplicationFailure`, so it is unit-tested on its own): steerableOp.ts drives it.
import { ApplicationFailure } from '@temporalio/workflow';
import { runLimits, type Actor, type DurableOpStatus, type OpSteerResult, type OpWorkOutcome, type RunStatus } from '@keelson/schema';
import type { CarriedOpState } from './steerableOp';

/**
 * One op execution: the steers accepted and not yet recorded (with who sent each), the caller keys
 * of accepted steers, the op's status, whether its work is done or the op is handing over, and the
 * work child's outcome once it arrived.
 */
export class SteerableOpRun {
  readonly queue: string[];
  /** Who sent each queued note (the caller the Update carried; null for a Signal), recorded as the frame's actor. */
  readonly senders: (Actor | null)[];
  readonly keys: Map<string, number>;
  accepted: number;
  delivered: number;
  status: RunStatus = 'RUNNING';
  workDone = false;
  handingOver = false;
  /** Who asks for the cancel that follows (the executor signals it first): the CANCELLED frame names them. */
  cancelledBy: Actor | undefined;
  /** The work child's outcome (it may arrive while handing over: it travels with the state). */
  outcome: OpWorkOutcome | undefined;
  childStarted: boolean;

  constructor(
    readonly opId: string,
    readonly carried?: CarriedOpState,
  ) {
    this.queue = [...(carried?.pending ?? [])];
    this.senders = this.queue.map((_, i) => carried?.pendingActors?.[i] ?? null);
    this.keys = new Map<string, number>(Object.entries(carried?.keys ?? {}));
    this.accepted = carried?.accepted ?? 0;
    this.delivered = carried?.delivered ?? 0;
    this.outcome = carried?.outcome;
    this.childStarted = carried !== undefined;
  }

  /** Accepts a note: queued to be recorded, with its sender; returns its index. */
  take(note: string, actor: Actor | null = null): number {
    this.queue.push(note);
    this.senders.push(actor);
    return this.accepted++;
  }

  /** Why a note is refused whatever the limits: it is empty, or the op is finishing. */
  refusal(note: unknown): ApplicationFailure | undefined {
    if (typeof note !== 'string' || !note.trim()) return ApplicationFailure.create({ type: 'BAD_USER_INPUT', message: 'the note is empty', nonRetryable: true });
    if (this.status !== 'RUNNING' || this.workDone) return ApplicationFailure.create({ type: 'CONFLICT', message: `op ${this.opId} has finished; a finished op cannot be steered`, nonRetryable: true });
    return undefined;
  }

  /** The `steer` Signal: a note within the limits is taken, anything else dropped. */
  signalled(note: string): void {
    if (!this.refusal(note) && this.queue.length < runLimits.steersPending && this.accepted < runLimits.steersPerOp) this.take(note);
  }

  /** The `steerNote` Update's validator: throws a refusal, unless `key` names a steer accepted already. */
  validateUpdate(note: string, key: string | undefined): void {
    const refused = this.refusal(note);
    if (refused) throw refused;
    if (key !== undefined && this.keys.has(key)) return;
    if (this.accepted >= runLimits.steersPerOp) {
      throw ApplicationFailure.create({ type: 'CONFLICT', message: `op ${this.opId} took its ${runLimits.steersPerOp} steers; it accepts no more`, nonRetryable: true });
    }
    if (this.queue.length >= runLimits.steersPending) {
      throw ApplicationFailure.create({
        type: 'CONFLICT',
        message: `op ${this.opId} has ${this.queue.length} steers waiting to be delivered (at most ${runLimits.steersPending}); steer again once they are`,
        nonRetryable: true,
      });
    }
  }

  /** The `steerNote` Update: a known caller key answers its steer's index again, otherwise the note is taken. */
  updated(note: string, actor: Actor | null, key: string | undefined, keyPrefix: string): OpSteerResult {
    const known = key === undefined ? undefined : this.keys.get(key);
    if (known !== undefined) return { index: known, duplicate: true };
    const index = this.take(note, actor);
    if (key?.startsWith(keyPrefix)) this.keys.set(key, index);
    return { index, duplicate: false };
  }

  /** The next steer to record (its index, note and sender), or undefined when none waits. */
  nextSteer(): { index: number; note: string; actor: Actor | null } | undefined {
    if (this.queue.length === 0) return undefined;
    return { index: this.delivered, note: this.queue[0]!, actor: this.senders[0] ?? null };
  }

  /** The steer `nextSteer` named was recorded. */
  steerRecorded(): void {
    this.queue.shift();
    this.senders.shift();
    this.delivered += 1;
  }

  /** The `status` Query's answer. */
  statusView(): DurableOpStatus {
    return { opId: this.opId, status: this.status, steersReceived: this.accepted, steersDelivered: this.delivered };
  }

  /** What the next execution carries: the steers not yet recorded, the keys, and an outcome that arrived. */
  handOver(): CarriedOpState {
    const { outcome } = this;
    return {
      accepted: this.accepted,
      delivered: this.delivered,
      pending: [...this.queue],
      pendingActors: [...this.senders],
      keys: Object.fromEntries(this.keys),
      ...(outcome !== undefined ? { outcome } : {}),
      continuations: (this.carried?.continuations ?? 0) + 1,
    };
  }
}
