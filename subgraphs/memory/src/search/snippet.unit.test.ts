import { trigramTerms } from './search.service';
import { snippet } from './snippet';

describe('snippet', () => {
  const long = `${'lorem ipsum dolor sit amet '.repeat(30)}the Quokka ledger drifted here ${'consectetur adipiscing elit '.repeat(30)}`;

  it('returns short text whole, whitespace collapsed', () => {
    expect(snippet('a\n\n  b\tc', 'b')).toBe('a b c');
  });

  it('centres on the whole query, case-insensitively, within the width', () => {
    const s = snippet(long, 'quokka ledger', 120);
    expect(s).toContain('Quokka ledger drifted');
    expect(s.startsWith('…') && s.endsWith('…')).toBe(true);
    expect(s.length).toBeLessThanOrEqual(122);
  });

  it('falls back to the longest query term, then to the start', () => {
    expect(snippet(long, 'why did it drift so much', 120)).toContain('drifted');
    expect(snippet(long, 'zzz', 40).startsWith('lorem ipsum')).toBe(true);
  });
});

describe('trigram terms', () => {
  it('takes code-looking tokens (fuzzy) and a one-word query (substring), and leaves plain words to full text', () => {
    const terms = (q: string) => trigramTerms(q).map((t) => `${t.term}${t.fuzzy ? '~' : ''}`);
    expect(terms('QuokkaSnapshot')).toEqual(['QuokkaSnapshot~']);
    expect(terms('billing/quokkaRecon')).toEqual(['billing/quokkaRecon~']);
    expect(terms('why does parseConfigFile fail in src/lib/thing.ts, again?')).toEqual(['parseConfigFile~', 'src/lib/thing.ts~']);
    expect(terms('quokka')).toEqual(['quokka']);
    expect(terms('why did the ledger drift after the rollout')).toEqual([]);
    expect(terms('flaky router')).toEqual([]);
    expect(terms('a b c d e f g h i j k l m n o p fooBar snake_case x/y.ts kebab-case v2beta')).toHaveLength(4);
  });
});
