import { z } from 'zod';
import { estimateTokens } from '../script/replyPlan';
import { describeZodError as describeIssues } from '@keelson/schema';

// The OpenAI Embeddings API: POST /v1/embeddings. Vectors are a signed, hashed bag of word stems,
// L2-normalised: the same text always gives the same vector, and texts sharing words are near.

const requestSchema = z.looseObject({
  input: z.union([z.string(), z.array(z.string()).min(1), z.array(z.number().int()).min(1), z.array(z.array(z.number().int())).min(1)]),
  model: z.string().optional(),
  dimensions: z.number().int().min(1).max(8192).optional(),
  encoding_format: z.enum(['float', 'base64']).optional(),
});

const STOPWORDS = new Set(
  'a an and are as at be but by for from has have in is it its of on or that the this to was were will with'.split(' '),
);

/** A crude stemmer: enough that `files` meets `file` and `writing` meets `write`. */
function stem(word: string): string {
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3).replace(/(.)\1$/, '$1');
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 4 && word.endsWith('es')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** FNV-1a, 32 bits. */
function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * The embedding of `text`: deterministic, unit length, `dimensions` long. Text without any word
 * maps to the first axis.
 */
export function embed(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0);
  const words = (text.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !STOPWORDS.has(w));
  const counts = new Map<string, number>();
  for (const word of words) counts.set(stem(word), (counts.get(stem(word)) ?? 0) + 1);
  for (const [term, count] of counts) {
    const index = fnv1a(term) % dimensions;
    const sign = fnv1a(term, 0x9747b28c) & 1 ? 1 : -1;
    vector[index] += sign * (1 + Math.log(count));
  }
  const norm = Math.sqrt(vector.reduce((n, v) => n + v * v, 0));
  if (norm === 0) {
    vector[0] = 1;
    return vector;
  }
  return vector.map((v) => v / norm);
}

/** Handles one embeddings request; `defaultDimensions` applies when the request names none. */
export function embeddings(body: unknown, defaultDimensions: number): { status: number; json: unknown } {
  const result = requestSchema.safeParse(body);
  if (!result.success) {
    return { status: 400, json: { error: { message: describeIssues(result.error, 'body'), type: 'invalid_request_error', param: 'input', code: null } } };
  }
  const req = result.data;
  const inputs: string[] =
    typeof req.input === 'string'
      ? [req.input]
      : req.input.map((entry) => (typeof entry === 'string' ? entry : Array.isArray(entry) ? entry.map((t) => `t${t}`).join(' ') : `t${entry}`));
  // A flat list of token ids is one input, not many.
  const texts = Array.isArray(req.input) && typeof req.input[0] === 'number' ? [inputs.join(' ')] : inputs;
  const dimensions = req.dimensions ?? defaultDimensions;
  const data = texts.map((text, index) => {
    const vector = embed(text, dimensions);
    const embedding = req.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  const tokens = texts.reduce((n, t) => n + estimateTokens(t.length), 0);
  return { status: 200, json: { object: 'list', data, model: req.model ?? 'keelson-embedding', usage: { prompt_tokens: tokens, total_tokens: tokens } } };
}
