import { seriesOf, type Sample } from './sampler';

const MB = 1024 * 1024;

/** Samples every 5 s: a Node process whose RSS moves with V8's committed heap, and one that serves no metrics. */
function samples(offHeap: (t: number) => number, committed: (t: number) => number): Sample[] {
  const out: Sample[] = [];
  for (let t = 0; t <= 300; t += 5) {
    out.push({
      t,
      cursorLag: 0,
      tailLag: 0,
      processes: {
        mesh: { cpu: 1, rss: offHeap(t) + committed(t), offHeap: offHeap(t), heap: 160 * MB, handles: 50, fds: 80, pg: 20 },
        temporal: { cpu: 1, rss: 170 * MB, fds: 32, pg: 0 },
      },
    });
  }
  return out;
}

describe('the soak\'s judged series', () => {
  it('judges a Node process\'s RSS outside the V8 heap, and a process without metrics by its whole RSS', () => {
    // V8 grows its young generation by 128 MB over the run: RSS moves, what lies outside the heap does not.
    const series = seriesOf(samples(() => 350 * MB, (t) => (t < 150 ? 180 : 308) * MB));
    const mesh = series.find((s) => s.name === 'mesh rss outside the V8 heap')!;
    expect(mesh.kind).toBe('rss');
    expect(new Set(mesh.samples.map((p) => p.v))).toEqual(new Set([350 * MB]));
    expect(series.find((s) => s.name === 'mesh rss')).toBeUndefined();
    expect(series.find((s) => s.name === 'temporal rss')!.samples[0]).toEqual({ t: 0, v: 170 * MB });
    // The dev server's zero Postgres connections are not judged; the mesh's are.
    expect(series.map((s) => s.name)).toEqual(['mesh rss outside the V8 heap', 'mesh heap', 'mesh handles', 'mesh fds', 'mesh pg', 'temporal rss', 'temporal fds', 'cursor lag', 'live-tail lag']);
  });

  it('falls back to the whole RSS when a sample lacks the heap\'s size', () => {
    const list = samples(() => 350 * MB, () => 180 * MB);
    delete list[3]!.processes.mesh!.offHeap;
    const series = seriesOf(list);
    expect(series.find((s) => s.name === 'mesh rss')!.samples[0]!.v).toBe(530 * MB);
    expect(series.find((s) => s.name === 'mesh rss outside the V8 heap')).toBeUndefined();
  });
});
