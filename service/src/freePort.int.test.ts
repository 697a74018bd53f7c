import { createServer, type Server } from 'node:net';
import { freePort, pickRange, portIsFree } from './freePort';

describe('freePort', () => {
  it('picks below the ephemeral range, never under 10000', () => {
    expect(pickRange([32768, 60999])).toEqual([20767, 32767]);
    expect(pickRange([15000, 60999])).toEqual([10000, 14999]);
    // A range starting too low to leave room below: pick above it instead.
    expect(pickRange([1024, 50000])).toEqual([50001, 54000]);
  });

  it('returns a port a server can bind, outside the ephemeral range', async () => {
    const [lo, hi] = pickRange();
    const port = await freePort();
    expect(port).toBeGreaterThanOrEqual(lo);
    expect(port).toBeLessThanOrEqual(hi);
    const server: Server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('never returns a port that is being listened on, and says so when every port is', async () => {
    const first = await freePort();
    const range: [number, number] = [first, first + 1];
    const held = createServer();
    await new Promise<void>((resolve) => held.listen(first, '127.0.0.1', resolve));
    try {
      // One of the two is taken: every pick must be the other (if that one is free at all).
      const other = await freePort('127.0.0.1', range).catch(() => undefined);
      if (other !== undefined) expect(other).toBe(first + 1);
      const second = createServer();
      await new Promise<void>((resolve, reject) => {
        second.once('error', reject);
        second.listen(first + 1, '127.0.0.1', resolve);
      }).catch(() => undefined);
      try {
        await expect(freePort('127.0.0.1', range)).rejects.toThrow(/no free port on 127\.0\.0\.1/);
      } finally {
        await new Promise<void>((resolve) => (second.listening ? second.close(() => resolve()) : resolve()));
      }
    } finally {
      await new Promise<void>((resolve) => held.close(() => resolve()));
    }
  });

  it('never hands out one port twice in a process, even while nothing listens on it yet', async () => {
    // A handed-out port whose two neighbours are free (other test processes bind ports in this range too).
    let first = await freePort();
    while (!(await portIsFree(first + 1)) || !(await portIsFree(first + 2))) first = await freePort();
    const range: [number, number] = [first, first + 2];
    // Only the two ports after `first` are left to hand out, each once, although none of the three is bound.
    const picks = [await freePort('127.0.0.1', range), await freePort('127.0.0.1', range)];
    expect(picks.sort((a, b) => a - b)).toEqual([first + 1, first + 2]);
    await expect(freePort('127.0.0.1', range)).rejects.toThrow(/no free port on 127\.0\.0\.1/);
  });
});
