import { getHeapStatistics, setFlagsFromString } from 'node:v8';
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

  it("is V8's heap resident in memory (its physical size, not the committed heap): within the RSS", async () => {
    for (let i = 0; i < 5; i++) {
      const before = getHeapStatistics();
      const value = await resident();
      const after = getHeapStatistics();
      const low = Math.min(before.total_physical_size, after.total_physical_size);
      const high = Math.max(before.total_physical_size, after.total_physical_size);
      expect(value).toBeGreaterThanOrEqual(low);
      expect(value).toBeLessThanOrEqual(high);
      expect(value).toBeLessThanOrEqual(after.total_heap_size);
      expect(value).toBeLessThan(process.memoryUsage().rss);
      // Between reads the heap changes: keep some of it alive.
      held.push(Array.from({ length: 100_000 }, (_, j) => ({ j })));
    }
    expect(held).toHaveLength(5);
  });
});

const held: unknown[] = [];
