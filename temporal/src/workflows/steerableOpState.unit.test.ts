import { ApplicationFailure } from '@temporalio/workflow';
import { runLimits, type Actor } from '@keelson/schema';
import type { CarriedOpState } from './steerableOp';
import { SteerableOpRun } from './steerableOpState';

const actor: Actor = { subject: 'u1', kind: 'token' };

/** The error a validator threw, or undefined. */
function refusalOf(f: () => void): ApplicationFailure | undefined {
  try {
    f();
    return undefined;
  } catch (err) {
    return err as ApplicationFailure;
  }
}

describe('SteerableOpRun', () => {
  it('continues a hand-over: its pending steers with their senders, keys, counts and outcome', () => {
    const carried: CarriedOpState = { accepted: 3, delivered: 1, pending: ['b', 'c'], pendingActors: [actor], keys: { 'key:x': 1 }, outcome: { outcome: 'SUCCEEDED' }, continuations: 2 };
    const run = new SteerableOpRun('op1', carried);
    expect(run.queue).toEqual(['b', 'c']);
    expect(run.senders).toEqual([actor, null]);
    expect(run.keys.get('key:x')).toBe(1);
    expect(run.childStarted).toBe(true);
    expect(run.statusView()).toEqual({ opId: 'op1', status: 'RUNNING', steersReceived: 3, steersDelivered: 1 });
    expect(run.handOver()).toEqual({ ...carried, pendingActors: [actor, null], continuations: 3 });
    const fresh = new SteerableOpRun('op2');
    expect([fresh.accepted, fresh.delivered, fresh.childStarted, fresh.outcome]).toEqual([0, 0, false, undefined]);
    expect(fresh.handOver()).toEqual({ accepted: 0, delivered: 0, pending: [], pendingActors: [], keys: {}, continuations: 1 });
  });

  it('records steers in order with their index and sender', () => {
    const run = new SteerableOpRun('op1');
    run.signalled('first');
    expect(run.updated('second', actor, 'key:a', 'key:')).toEqual({ index: 1, duplicate: false });
    expect(run.nextSteer()).toEqual({ index: 0, note: 'first', actor: null });
    run.steerRecorded();
    expect(run.nextSteer()).toEqual({ index: 1, note: 'second', actor });
    run.steerRecorded();
    expect(run.nextSteer()).toBeUndefined();
    expect(run.delivered).toBe(2);
  });

  it('answers a known caller key as a duplicate, remembering only keys with the prefix', () => {
    const run = new SteerableOpRun('op1');
    expect(run.updated('a', null, 'key:1', 'key:')).toEqual({ index: 0, duplicate: false });
    expect(run.updated('a again', null, 'key:1', 'key:')).toEqual({ index: 0, duplicate: true });
    expect(run.updated('b', null, 'generated-id', 'key:')).toEqual({ index: 1, duplicate: false });
    expect(run.keys.has('generated-id')).toBe(false);
    expect(run.queue).toEqual(['a', 'b']);
  });

  it('refuses an empty note, and any note once the op is finishing', () => {
    const run = new SteerableOpRun('op1');
    expect(refusalOf(() => run.validateUpdate('  ', undefined))?.type).toBe('BAD_USER_INPUT');
    run.signalled('');
    expect(run.queue).toEqual([]);
    run.workDone = true;
    expect(refusalOf(() => run.validateUpdate('late', undefined))?.message).toBe('op op1 has finished; a finished op cannot be steered');
    run.signalled('late');
    expect(run.accepted).toBe(0);
  });

  it('refuses past the pending and per-op limits, except a known key', () => {
    const run = new SteerableOpRun('op1');
    for (let i = 0; i < runLimits.steersPending; i += 1) run.updated(`n${i}`, null, `key:${i}`, 'key:');
    expect(refusalOf(() => run.validateUpdate('more', undefined))?.message).toContain(`has ${runLimits.steersPending} steers waiting to be delivered`);
    expect(refusalOf(() => run.validateUpdate('again', 'key:0'))).toBeUndefined();
    run.signalled('dropped');
    expect(run.queue).toHaveLength(runLimits.steersPending);
    run.accepted = runLimits.steersPerOp;
    run.queue.length = 0;
    expect(refusalOf(() => run.validateUpdate('more', undefined))?.message).toBe(`op op1 took its ${runLimits.steersPerOp} steers; it accepts no more`);
  });
});
