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
    expect([fresh.accepted, fresh.delivered, fresh.childStarted, fresh.outcome, fresh.handingOver]).toEqual([0, 0, false, undefined, false]);
    expect(fresh.handOver()).toStrictEqual({ accepted: 0, delivered: 0, pending: [], pendingActors: [], keys: {}, continuations: 1 });
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

  it('refuses with non-retryable failures that say why', () => {
    const run = new SteerableOpRun('op1');
    expect(refusalOf(() => run.validateUpdate('go on', undefined))).toBeUndefined();
    const empty = refusalOf(() => run.validateUpdate('', undefined));
    expect([empty?.type, empty?.message, empty?.nonRetryable]).toEqual(['BAD_USER_INPUT', 'the note is empty', true]);
    run.status = 'CANCELLED';
    const finished = refusalOf(() => run.validateUpdate('late', undefined));
    expect([finished?.type, finished?.message, finished?.nonRetryable]).toEqual(['CONFLICT', 'op op1 has finished; a finished op cannot be steered', true]);
    run.signalled('late');
    expect(run.queue).toEqual([]);
  });

  it('takes no signalled note, and refuses an update, once the op took its steers, however few wait', () => {
    const run = new SteerableOpRun('op1');
    run.accepted = runLimits.steersPerOp - 1;
    run.signalled('last');
    expect(run.queue).toEqual(['last']);
    run.signalled('one too many');
    expect(run.queue).toEqual(['last']);
    expect(run.accepted).toBe(runLimits.steersPerOp);
    const spent = refusalOf(() => run.validateUpdate('more', undefined));
    expect([spent?.type, spent?.nonRetryable]).toEqual(['CONFLICT', true]);
  });

  it('refuses an update while the pending steers are full, as a non-retryable conflict naming how many wait', () => {
    const run = new SteerableOpRun('op1');
    for (let i = 0; i < runLimits.steersPending - 1; i += 1) run.signalled(`n${i}`);
    expect(refusalOf(() => run.validateUpdate('fits', undefined))).toBeUndefined();
    run.signalled('fills');
    const full = refusalOf(() => run.validateUpdate('more', undefined));
    expect([full?.type, full?.message, full?.nonRetryable]).toEqual([
      'CONFLICT',
      `op op1 has ${runLimits.steersPending} steers waiting to be delivered (at most ${runLimits.steersPending}); steer again once they are`,
      true,
    ]);
  });

  it('continues a hand-over that carried no senders (an older history): every pending steer is anonymous', () => {
    const run = new SteerableOpRun('op1', { accepted: 2, delivered: 0, pending: ['a', 'b'], keys: {}, continuations: 1 } as CarriedOpState);
    expect(run.senders).toEqual([null, null]);
    expect(run.nextSteer()).toEqual({ index: 0, note: 'a', actor: null });
  });

  it('takes an update without a caller key, remembering no key', () => {
    const run = new SteerableOpRun('op1');
    expect(run.updated('note', actor, undefined, 'key:')).toEqual({ index: 0, duplicate: false });
    expect(run.keys.size).toBe(0);
    expect(run.nextSteer()).toEqual({ index: 0, note: 'note', actor });
  });

  it('refuses a note that is not a string as empty', () => {
    const run = new SteerableOpRun('op1');
    const refused = refusalOf(() => run.validateUpdate(42 as unknown as string, undefined));
    expect([refused?.type, refused?.message]).toEqual(['BAD_USER_INPUT', 'the note is empty']);
    run.signalled(undefined as unknown as string);
    expect(run.queue).toEqual([]);
  });
});
