import type { Tiktoken, TiktokenBPE } from 'js-tiktoken/lite' with { 'resolution-mode': 'import' };

// js-tiktoken ships CommonJS builds (its exports map's `require`) but only ESM type declarations:
// types come from the ESM side, the code from the CommonJS side.
/* eslint-disable @typescript-eslint/no-require-imports */
const { Tiktoken: TiktokenClass } = require('js-tiktoken/lite') as { Tiktoken: typeof Tiktoken };
const loadRanks = () => require('js-tiktoken/ranks/cl100k_base') as TiktokenBPE;
/* eslint-enable @typescript-eslint/no-require-imports */

/** The BPE encoding every token count of memory uses (OpenAI's cl100k_base). */
export const TOKENIZER = 'cl100k_base';

let encoder: Tiktoken | undefined;

/** Loaded on first use (~0.3 s for the ranks), then shared. */
function enc(): Tiktoken {
  return (encoder ??= new TiktokenClass(loadRanks()));
}

/**
 * Tokens `text` encodes to. Special-token markers in the text (`<|endoftext|>`) count as the plain
 * text they are: memory holds what agents wrote, never control tokens.
 */
export function countTokens(text: string): number {
  return text ? enc().encode(text, [], []).length : 0;
}

/** The longest prefix of `text` of at most `maxTokens` tokens (never splitting a character). */
export function truncateToTokens(text: string, maxTokens: number): string {
  if (maxTokens <= 0) return '';
  const tokens = enc().encode(text, [], []);
  if (tokens.length <= maxTokens) return text;
  let cut = enc().decode(tokens.slice(0, maxTokens)).replace(/\uFFFD+$/, '');
  // Decoding a prefix can end mid-character or re-tokenize differently: shrink until it fits.
  while (cut && countTokens(cut) > maxTokens) cut = cut.slice(0, -1);
  return cut;
}
