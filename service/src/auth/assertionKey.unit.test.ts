import type { Caller } from '@keelson/schema';
import { AssertionKey } from './assertionKey';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const caller = (subject: string): Caller => ({ subject, kind: 'service', scopes: ['read'] });

/** Signs and verifies one assertion of `subject` at `atS` seconds after T0. */
async function signAndVerify(key: AssertionKey, subject: string, atS: number): Promise<Caller> {
  jest.setSystemTime(T0 + atS * 1000);
  return key.verify(await key.sign(caller(subject)));
}

describe('AssertionKey caches', () => {
  // Only the clock is faked: jose's crypto and promises run as they do.
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask', 'setTimeout', 'setInterval', 'clearTimeout', 'clearInterval', 'hrtime', 'performance'] }));
  afterEach(() => jest.useRealTimers());

  it('remembers the assertions it signed and verified while they are valid', async () => {
    const key = AssertionKey.random();
    for (const s of ['a', 'b', 'c']) expect(await signAndVerify(key, s, 0)).toMatchObject({ subject: s });
    expect(key.cacheSizes()).toEqual({ signed: 3, verified: 3 });
    // Within their reuse margin, the same assertions serve again: nothing new is remembered.
    for (const s of ['a', 'b', 'c']) await signAndVerify(key, s, 30);
    expect(key.cacheSizes()).toEqual({ signed: 3, verified: 3 });
  });

  it('forgets expired assertions once a lifetime has passed, keeping the valid ones', async () => {
    const key = AssertionKey.random();
    await signAndVerify(key, 'a', 0); // valid until 120 s
    await signAndVerify(key, 'b', 100); // valid until 220 s
    await signAndVerify(key, 'c', 130); // a has expired: dropped from both caches
    expect(key.cacheSizes()).toEqual({ signed: 2, verified: 2 });
    await signAndVerify(key, 'd', 200); // within one lifetime of the last sweep: nothing dropped
    expect(key.cacheSizes()).toEqual({ signed: 3, verified: 3 });
    await signAndVerify(key, 'e', 400); // b, c and d have expired
    expect(key.cacheSizes()).toEqual({ signed: 1, verified: 1 });
  });

  it('still refuses an expired assertion, and verifies a fresh one of the same caller', async () => {
    const key = AssertionKey.random();
    jest.setSystemTime(T0);
    const old = await key.sign(caller('a'));
    await key.verify(old);
    jest.setSystemTime(T0 + 121_000);
    await expect(key.verify(old)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect(await key.verify(await key.sign(caller('a')))).toMatchObject({ subject: 'a' });
  });
});
