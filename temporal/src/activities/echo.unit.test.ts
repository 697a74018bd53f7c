import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '.';

describe('echo activity', () => {
  it('returns the message upper-cased with attempt 1 on a first try', async () => {
    const env = new MockActivityEnvironment();
    const { echo } = createActivities();

    await expect(env.run(echo, { message: 'hello mesh' })).resolves.toEqual({ echoed: 'HELLO MESH', activityAttempt: 1 });
  });

  it('reports the attempt number Temporal gives a retry', async () => {
    const env = new MockActivityEnvironment({ attempt: 3 });
    const { echo } = createActivities();

    await expect(env.run(echo, { message: 'again' })).resolves.toEqual({ echoed: 'AGAIN', activityAttempt: 3 });
  });
});
