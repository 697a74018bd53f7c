import { fuse } from './search.service';

const at = (minute: number) => new Date(Date.UTC(2026, 0, 1, 0, minute));
const row = (id: string, rnk: number, minute = 0, kind: 'message' | 'summary' = 'message') => ({ kind, id, rnk: String(rnk), at: at(minute) });

describe('fuse: reciprocal-rank fusion of the legs', () => {
  it("sums an item's weighted reciprocal ranks over the legs that found it", () => {
    const [a, b] = fuse(
      [
        { leg: 'fts_any', rows: [row('1', 1), row('2', 2)] },
        { leg: 'vec', rows: [row('2', 1)] },
      ],
      10,
    );
    expect(b).toMatchObject({ id: '1', score: 0.6 / 61, legs: ['fts_any'], whole: false });
    expect(a).toMatchObject({ id: '2', legs: ['fts_any', 'vec'], whole: false });
    expect(a!.score).toBeCloseTo(0.6 / 62 + 1 / 61, 12);
  });

  it('puts matches of the whole query first, however the other legs rank', () => {
    const fused = fuse(
      [
        { leg: 'fts_any', rows: [row('1', 1), row('2', 2)] },
        { leg: 'vec', rows: [row('1', 1)] },
        { leg: 'trgm', rows: [row('3', 30)] },
        { leg: 'fts', rows: [row('2', 30)] },
      ],
      10,
    );
    expect(fused.map((f) => [f.id, f.whole])).toEqual([
      ['2', true],
      ['3', true],
      ['1', false],
    ]);
  });

  it('breaks equal scores by recency, then by the higher id (as numbers), and keeps the limit', () => {
    const fused = fuse(
      [
        { leg: 'fts', rows: [row('9', 1, 5), row('10', 1, 5), row('11', 1, 7), row('12', 1, 1)] },
        { leg: 'fts', rows: [row('4', 1, 5, 'summary')] },
      ],
      4,
    );
    expect(fused.map((f) => `${f.kind}:${f.id}`)).toEqual(['message:11', 'message:10', 'message:9', 'summary:4']);
  });

  it('scores equal ranks equally whatever order the legs answered in', () => {
    const legs = [
      { leg: 'fts' as const, rows: [row('1', 3)] },
      { leg: 'fts_any' as const, rows: [row('1', 7), row('2', 3)] },
      { leg: 'vec' as const, rows: [row('2', 7)] },
      { leg: 'trgm' as const, rows: [row('2', 3)] },
    ];
    const forward = fuse(legs, 10).map((f) => [f.id, f.score]);
    const backward = fuse([...legs].reverse(), 10).map((f) => [f.id, f.score]);
    expect(backward).toEqual(forward);
  });
});
