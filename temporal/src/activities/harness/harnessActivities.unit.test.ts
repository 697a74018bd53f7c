import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MeshError } from '@keelson/schema';
import { createHarnessActivities, type HarnessTaskPlane } from './harnessActivities';

const outcome = { sessionId: 'pi:0b9f6a4e-3c2d-4e1f-8a7b-6c5d4e3f2a1b', turnId: 't', status: 'COMPLETED' as const, result: 'DONE', error: null };

function planeWith(runTaskTurn: HarnessTaskPlane['runTaskTurn'], runSteerTurn?: HarnessTaskPlane['runSteerTurn']): HarnessTaskPlane {
  const noSteers: HarnessTaskPlane['runSteerTurn'] = async () => {
    throw new Error('this test runs no steers');
  };
  return { runTaskTurn, runSteerTurn: runSteerTurn ?? noSteers, settleTask: async () => null, interruptTask: async () => true };
}

describe('harnessTask activities', () => {
  it('runs the turn with the attempt number, heartbeating through the activity', async () => {
    const env = new MockActivityEnvironment({ attempt: 3 });
    const beats: unknown[] = [];
    env.on('heartbeat', (d) => beats.push(d));
    const seen: number[] = [];
    const { harnessTaskTurn } = createHarnessActivities({
      plane: planeWith(async (_id, ctl) => {
        seen.push(ctl.attempt);
        ctl.heartbeat({ pgid: 42 });
        return outcome;
      }),
    });
    await expect(env.run(harnessTaskTurn, { taskId: 'task-1' })).resolves.toEqual({ taskId: 'task-1', sessionId: outcome.sessionId, status: 'COMPLETED', result: 'DONE', error: null });
    expect(seen).toEqual([3]);
    expect(beats).toEqual([{ pgid: 42 }]);
  });

  it('reports a cancelled turn as cancelled once the plane has seen the abort (the group kill is the plane\'s, tested there)', async () => {
    const env = new MockActivityEnvironment();
    const { harnessTaskTurn } = createHarnessActivities({
      plane: planeWith(
        (_id, ctl) =>
          new Promise((resolve) => ctl.signal.addEventListener('abort', () => resolve({ ...outcome, status: 'INTERRUPTED', error: 'interrupted' }))),
      ),
    });
    const running = env.run(harnessTaskTurn, { taskId: 'task-2' });
    env.cancel();
    await expect(running).rejects.toBeInstanceOf(CancelledFailure);
  });

  it('keeps the mesh code: TURN_IN_FLIGHT fails retryable, CAPABILITY_UNSUPPORTED non-retryable', async () => {
    const fail = (code: 'TURN_IN_FLIGHT' | 'CAPABILITY_UNSUPPORTED') =>
      new MockActivityEnvironment().run(
        createHarnessActivities({ plane: planeWith(async () => Promise.reject(new MeshError(code, 'no'))) }).harnessTaskTurn,
        { taskId: 't' },
      );
    await expect(fail('TURN_IN_FLIGHT')).rejects.toMatchObject({ type: 'TURN_IN_FLIGHT', nonRetryable: false });
    await expect(fail('CAPABILITY_UNSUPPORTED')).rejects.toMatchObject({ type: 'CAPABILITY_UNSUPPORTED', nonRetryable: true });
  });

  it('fails SERVICE_UNAVAILABLE when built without a control plane (as on a worker started without one)', async () => {
    const { harnessTaskTurn } = createHarnessActivities();
    await expect(new MockActivityEnvironment().run(harnessTaskTurn, { taskId: 't' })).rejects.toBeInstanceOf(ApplicationFailure);
    await expect(new MockActivityEnvironment().run(harnessTaskTurn, { taskId: 't' })).rejects.toMatchObject({ type: 'SERVICE_UNAVAILABLE' });
  });

  it('runs a steer as a turn with the steer id, and a session held by another turn is a retryable TURN_IN_FLIGHT', async () => {
    const env = new MockActivityEnvironment({ attempt: 2 });
    const calls: { steerId: string; text: string; attempt: number }[] = [];
    let busy = true;
    const { sessionSteerTurn } = createHarnessActivities({
      plane: planeWith(
        async () => outcome,
        async (input, ctl) => {
          calls.push({ steerId: input.steerId, text: input.text, attempt: ctl.attempt });
          if (busy) throw new MeshError('TURN_IN_FLIGHT', 'session pi:x has a turn in flight');
          return { ...outcome, turnId: input.steerId };
        },
      ),
    });
    const input = { sessionId: outcome.sessionId, steerId: 's-1', text: 'also add tests' };
    const refused = await env.run(sessionSteerTurn, input).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect(refused).toMatchObject({ type: 'TURN_IN_FLIGHT', nonRetryable: false });
    busy = false;
    await expect(env.run(sessionSteerTurn, input)).resolves.toEqual({ steerId: 's-1', sessionId: outcome.sessionId, status: 'COMPLETED', error: null });
    expect(calls).toEqual([
      { steerId: 's-1', text: 'also add tests', attempt: 2 },
      { steerId: 's-1', text: 'also add tests', attempt: 2 },
    ]);
  });
});
