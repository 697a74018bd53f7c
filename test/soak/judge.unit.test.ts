import { checkSubscriber, floors, judge, judgeResource, type Series } from './judge';

const MB = 1024 * 1024;

/** A 300-second run sampled every 5 s, the value given by `f(t)`. */
function series(kind: Series['kind'], f: (t: number) => number, name = `mesh ${kind}`): Series {
  const samples = [];
  for (let t = 0; t <= 300; t += 5) samples.push({ t, v: f(t) });
  return { name, kind, samples };
}

describe('judgeResource', () => {
  it('passes a flat resource', () => {
    expect(judgeResource(series('fds', () => 120), 300)).toMatchObject({ first: 120, last: 120, growth: 0, ok: true });
  });

  it('fails RSS that keeps growing (20% over the run), and names the growth and what was allowed', () => {
    const v = judgeResource(series('rss', (t) => 2000 * MB * (1 + (t / 300) * 0.2)), 300);
    expect(v.ok).toBe(false);
    expect(v.allowed).toBeCloseTo(0.05 * v.first);
    expect(v.growth).toBeGreaterThan(v.allowed);
  });

  it('passes growth within 5% of the level', () => {
    expect(judgeResource(series('rss', (t) => 2000 * MB * (1 + (t / 300) * 0.04)), 300).ok).toBe(true);
  });

  it('allows each resource its floor where 5% is less (3 handles over 20)', () => {
    expect(judgeResource(series('handles', (t) => (t < 250 ? 20 : 23)), 300)).toMatchObject({ allowed: floors.handles, growth: 3, ok: true });
    expect(judgeResource(series('handles', (t) => (t < 250 ? 20 : 24)), 300)).toMatchObject({ growth: 4, ok: false });
  });

  it('ignores the first third of the run (warm-up)', () => {
    expect(judgeResource(series('pg', (t) => (t < 100 ? 2 : 10)), 300).ok).toBe(true);
  });

  it('compares the first and the last quarter of the judged window, not single samples', () => {
    // A spike in the middle of the window does not count; a step in the last quarter does.
    expect(judgeResource(series('fds', (t) => (t > 180 && t < 200 ? 500 : 100)), 300).ok).toBe(true);
    expect(judgeResource(series('fds', (t) => (t >= 250 ? 120 : 100)), 300).ok).toBe(false);
  });

  it('judges the heap by its troughs: a sawtooth with a flat floor passes, a rising floor fails', () => {
    const saw = (floor: (t: number) => number) => (t: number) => floor(t) + ((t / 5) % 4) * 20 * MB;
    expect(judgeResource(series('heap', saw(() => 90 * MB)), 300)).toMatchObject({ first: 90 * MB, last: 90 * MB, ok: true });
    const rising = judgeResource(series('heap', saw((t) => 90 * MB + t * 0.1 * MB)), 300);
    expect(rising.ok).toBe(false);
    expect(rising.first).toBe(100 * MB);
  });

  it('takes the median of a quarter, so one outlier does not move the level', () => {
    expect(judgeResource(series('rss', (t) => (t === 295 ? 900 * MB : 400 * MB)), 300)).toMatchObject({ last: 400 * MB, ok: true });
  });

  it('fails a resource with too few samples to judge, saying so', () => {
    const v = judgeResource({ name: 'mesh rss', kind: 'rss', samples: [{ t: 0, v: 1 }] }, 300);
    expect(v).toMatchObject({ ok: false, reason: expect.stringContaining('too few samples') });
  });
});

describe('checkSubscriber', () => {
  it('finds nothing wrong with every expected event once, in order', () => {
    expect(checkSubscriber([1, 2, 3], [1, 2, 3])).toEqual({ gaps: [], repeats: [], reorders: 0 });
  });

  it('names each missing event as a gap', () => {
    expect(checkSubscriber([1, 3], [1, 2, 3, 4]).gaps).toEqual([2, 4]);
  });

  it('does not expect events committed after the last one it waited for', () => {
    expect(checkSubscriber([1, 2], [1, 2, 3], 2).gaps).toEqual([]);
  });

  it('names each event received twice as a repeat', () => {
    expect(checkSubscriber([1, 2, 2, 3], [1, 2, 3])).toEqual({ gaps: [], repeats: [2], reorders: 0 });
  });

  it('counts an event received after a later one as a reorder', () => {
    expect(checkSubscriber([1, 3, 2], [1, 2, 3])).toEqual({ gaps: [], repeats: [], reorders: 1 });
  });
});

describe('judge', () => {
  const flat = [series('rss', () => 300 * MB), series('heap', () => 80 * MB)];
  const clean = { name: 'runEvents#0', check: { gaps: [], repeats: [], reorders: 0 } };

  it('passes with no errors, clean subscribers and flat resources, printing a verdict per resource', () => {
    const v = judge({ durationS: 300, errors: [], subscribers: [clean], series: flat });
    expect(v.ok).toBe(true);
    expect(v.lines).toEqual([
      'PASS errors: 0',
      'PASS subscribers: 1 checked, 0 with a gap, repeat or reorder',
      'PASS mesh rss: 300.0 MB → 300.0 MB (+0.0 MB, allowed +64.0 MB)',
      'PASS mesh heap: 80.0 MB → 80.0 MB (+0.0 MB, allowed +8.0 MB)',
    ]);
  });

  it('fails on a single error, naming it', () => {
    const v = judge({ durationS: 300, errors: ['query at …: boom'], subscribers: [clean], series: flat });
    expect(v.ok).toBe(false);
    expect(v.lines[0]).toBe('FAIL errors: 1 (first: query at …: boom)');
  });

  it('fails on one subscriber with a gap, naming it', () => {
    const v = judge({ durationS: 300, errors: [], subscribers: [clean, { name: 'harnessEvents#3', check: { gaps: [7], repeats: [], reorders: 0 } }], series: flat });
    expect(v.ok).toBe(false);
    expect(v.lines[1]).toBe('FAIL subscribers: 2 checked, 1 with a gap, repeat or reorder; harnessEvents#3: 1 gaps, 0 repeats, 0 reorders');
  });

  it('fails with no subscriber checked at all', () => {
    expect(judge({ durationS: 300, errors: [], subscribers: [], series: flat }).ok).toBe(false);
  });

  it('fails when one resource grows', () => {
    const v = judge({ durationS: 300, errors: [], subscribers: [clean], series: [...flat, series('fds', (t) => 100 + t, 'gateway fds')] });
    expect(v.ok).toBe(false);
    expect(v.lines.at(-1)).toMatch(/^FAIL gateway fds: /);
  });
});
