import { countTokens, TOKENIZER, truncateToTokens } from './tokenizer';

describe('the memory tokenizer', () => {
  it('counts cl100k_base tokens, with special-token markers counted as the text they are', () => {
    expect(TOKENIZER).toBe('cl100k_base');
    expect(countTokens('')).toBe(0);
    expect(countTokens('hello world')).toBe(2);
    expect(countTokens('<|endoftext|>')).toBeGreaterThan(1);
  });

  it('truncates to at most the given tokens, never splitting a character', () => {
    const text = 'naïve café 🚀 '.repeat(50);
    for (const max of [0, 1, 3, 17, 100]) {
      const cut = truncateToTokens(text, max);
      expect(countTokens(cut)).toBeLessThanOrEqual(max);
      expect(text.startsWith(cut)).toBe(true);
      expect(cut).not.toMatch(/\uFFFD/);
    }
    expect(truncateToTokens('short', 10)).toBe('short');
  });
});
