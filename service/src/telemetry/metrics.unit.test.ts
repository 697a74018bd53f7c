import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { metricsRegistry } from './metrics';

/** A full garbage collection on demand (V8's own, as `--expose-gc` gives it). */
function fullGc(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

async function liveHeap(): Promise<number> {
  const metric = await metricsRegistry().getSingleMetric('keelson_heap_live_bytes')!.get();
  return metric.values[0]!.value;
}

describe('keelson_heap_live_bytes', () => {
  // The registry (and its GC record) exists before anything here collects.
  beforeAll(() => metricsRegistry());

  it('is the heap left by the last full collection: it holds what is referenced and drops what was released', async () => {
    let held: { i: number }[] | null = Array.from({ length: 2_000_000 }, (_, i) => ({ i }));
    fullGc();
    const holding = await liveHeap();
    expect(held.length).toBe(2_000_000);
    held = null;
    fullGc();
    const released = await liveHeap();
    expect(released).toBeGreaterThan(0);
    // Two million small objects are some 30 MB or more on a 64-bit heap.
    expect(holding - released).toBeGreaterThan(30 * 1024 * 1024);
  });

  it('ignores garbage not yet collected: allocating without a full collection leaves it unchanged', async () => {
    fullGc();
    const before = await liveHeap();
    // Young-generation garbage, several semi-spaces of it: scavenges collect it, not a full collection.
    let made = 0;
    for (let round = 0; round < 20; round++) made += Array.from({ length: 100_000 }, (_, i) => ({ i })).length;
    expect(made).toBe(2_000_000);
    expect(await liveHeap()).toBe(before);
  });
});

describe('keelson_heap_resident_bytes', () => {
  const resident = async () => (await metricsRegistry().getSingleMetric('keelson_heap_resident_bytes')!.get()).values[0]!.value;

  it('is the V8 heap resident in memory: within the RSS, and it grows with what the heap holds', async () => {
    fullGc();
    const before = await resident();
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(process.memoryUsage().rss);
    // About 60 MB of small objects, kept referenced while it is read again.
    const kept = Array.from({ length: 1_000_000 }, (_, i) => ({ i, s: `item-${i}` }));
    const after = await resident();
    expect(after - before).toBeGreaterThan(20 * 1024 * 1024);
    expect(after).toBeLessThan(process.memoryUsage().rss);
    expect(kept).toHaveLength(1_000_000);
  });
});
